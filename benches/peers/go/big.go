// Savina's "big" on goroutines, the Go side of benches/peers/src/bin/big.rs.
//
// N goroutines; each sends a ping to a uniformly random other one (the
// xorshift64 of big.rs, seeded from the goroutine's index), waits for its
// pong, M times; every goroutine answers every ping at all times. Each has a
// channel of capacity N: it never holds more (one ping from each other
// goroutine and one pong), so no send blocks. One untimed warm-up round
// (M/10 pings), then one timed round; prints `round_ns`, from the first
// start to the last goroutine's M-th pong, and checks the pongs and the
// answered pings against N*M.
//
//	GOMAXPROCS=2 go run benches/peers/go/big.go 1000 1000
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	start = iota
	ping
	pong
	stop
)

type msg struct {
	kind int32
	from int32
}

func seed(index int) uint64 {
	return uint64(index+1) * 0x9E3779B97F4A7C15
}

func other(rng *uint64, me, n int) int {
	x := *rng
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*rng = x
	r := int(x % uint64(n-1))
	if r >= me {
		r++
	}
	return r
}

// round runs one round and returns the time from the first start to the
// last goroutine's M-th pong.
func round(n int, m uint64) time.Duration {
	chans := make([]chan msg, n)
	for i := range chans {
		chans[i] = make(chan msg, n)
	}
	var done, closed sync.WaitGroup
	done.Add(n)
	closed.Add(n)
	var pongs, answered atomic.Uint64
	for i := 0; i < n; i++ {
		go func(me int) {
			defer closed.Done()
			rng := seed(me)
			var got, answers uint64
			in := chans[me]
			for {
				v := <-in
				switch v.kind {
				case ping:
					answers++
					chans[v.from] <- msg{kind: pong}
				case pong:
					got++
					if got < m {
						chans[other(&rng, me, n)] <- msg{kind: ping, from: int32(me)}
					} else {
						done.Done()
					}
				case start:
					chans[other(&rng, me, n)] <- msg{kind: ping, from: int32(me)}
				case stop:
					pongs.Add(got)
					answered.Add(answers)
					return
				}
			}
		}(i)
	}
	begin := time.Now()
	for _, c := range chans {
		c <- msg{kind: start}
	}
	done.Wait()
	took := time.Since(begin)
	for _, c := range chans {
		c <- msg{kind: stop}
	}
	closed.Wait()
	want := uint64(n) * m
	if pongs.Load() != want || answered.Load() != want {
		fmt.Printf("big: pongs %d, answered %d, want %d\n", pongs.Load(), answered.Load(), want)
		os.Exit(1)
	}
	return took
}

func main() {
	n, m := 1000, uint64(1000)
	if len(os.Args) > 2 {
		n, _ = strconv.Atoi(os.Args[1])
		mm, _ := strconv.Atoi(os.Args[2])
		m = uint64(mm)
	}
	warm := m / 10
	if warm == 0 {
		warm = 1
	}
	round(n, warm)
	took := round(n, m)
	fmt.Printf("round_ns %d\n", took.Nanoseconds())
}
