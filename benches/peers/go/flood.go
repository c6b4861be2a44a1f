// The `blocking` shape of benches/peers/src/bin/flood.rs on goroutines.
//
// S sender goroutines each push their share of N values (every S-th from
// its index) into one channel of capacity 1,000; a value that does not fit
// at once is sent with a blocking send racing a 10 s timer. One consumer
// goroutine sums until N. One untimed warm-up round (N/10), then one timed
// round; prints `round_ns` (from the senders' start to the consumer's end),
// `fallbacks` (sends that had to block), and checks the sum.
//
//	GOMAXPROCS=2 go run benches/peers/go/flood.go 10000000 2
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const capacity = 1000

func round(n uint64, senders int) (time.Duration, uint64) {
	ch := make(chan uint64, capacity)
	sum := make(chan uint64)
	var fallbacks atomic.Uint64
	var wg sync.WaitGroup
	begin := time.Now()
	go func() {
		var s uint64
		for seen := uint64(0); seen < n; seen++ {
			s += <-ch
		}
		sum <- s
	}()
	wg.Add(senders)
	for k := 0; k < senders; k++ {
		go func(k int) {
			defer wg.Done()
			var mine uint64
			for v := uint64(k); v < n; v += uint64(senders) {
				select {
				case ch <- v:
				default:
					mine++
					timer := time.NewTimer(10 * time.Second)
					select {
					case ch <- v:
						timer.Stop()
					case <-timer.C:
						fmt.Println("flood: no room within the timeout")
						os.Exit(1)
					}
				}
			}
			fallbacks.Add(mine)
		}(k)
	}
	wg.Wait()
	s := <-sum
	took := time.Since(begin)
	if s != n*(n-1)/2 {
		fmt.Printf("flood: sum %d, want %d\n", s, n*(n-1)/2)
		os.Exit(1)
	}
	return took, fallbacks.Load()
}

func main() {
	n, senders := uint64(10000000), 2
	if len(os.Args) > 2 {
		nn, _ := strconv.Atoi(os.Args[1])
		n = uint64(nn)
		senders, _ = strconv.Atoi(os.Args[2])
	}
	round(n/10, senders)
	took, fallbacks := round(n, senders)
	fmt.Printf("round_ns %d\nfallbacks %d\n", took.Nanoseconds(), fallbacks)
}
