// Wake latency in Go, the shape of `benches/peers/src/bin/wake.rs`: a
// goroutine blocked on a channel receive, and a sender goroutine locked to
// its own OS thread that reads the clock and sends the stamp, one send
// every 2 ms so that the runtime has gone idle (its Ps parked) before
// each; the receiver takes the time since the stamp as its receive
// returns. The wake bin builds and runs this itself when `go` is on PATH;
// by hand:
//
//	GOMAXPROCS=2 go run benches/peers/go/wake.go -n 1000
//
// Prints one latency per line, in nanoseconds, in the order taken.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

func main() {
	samples := flag.Int("n", 1000, "samples")
	spacing := flag.Duration("spacing", 2*time.Millisecond, "time between two sends")
	flag.Parse()

	stamps := make(chan time.Time)
	done := make(chan []int64)
	go func() {
		latencies := make([]int64, 0, *samples)
		for sent := range stamps {
			latencies = append(latencies, int64(time.Since(sent)))
		}
		done <- latencies
	}()
	go func() {
		runtime.LockOSThread()
		for i := 0; i < *samples; i++ {
			time.Sleep(*spacing)
			stamps <- time.Now()
		}
		close(stamps)
	}()
	latencies := <-done
	if len(latencies) != *samples {
		fmt.Fprintf(os.Stderr, "%d of %d samples\n", len(latencies), *samples)
		os.Exit(1)
	}
	for _, ns := range latencies {
		fmt.Println(ns)
	}
}
