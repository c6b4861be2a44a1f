// Knowing when a goroutine ends, in Go: the nearest Go has to a monitor is
// a done channel closed by the goroutine as it ends. Two of the shapes of
// `benches/peers/src/bin/links.rs`, to run side by side with it:
//
//		GOMAXPROCS=2 go run benches/peers/go/links.go
//
//	  - down: a watcher starts a goroutine that stamps the clock and closes
//	    its done channel; the watcher, blocked on the channel, takes the time
//	    since the stamp (p50, p99 and the mean of p10-p90 over 20,000
//	    samples, ns). Each window holds the cost of one clock read, printed
//	    beside them (the gap between two back-to-back reads), as the Rust
//	    side prints its own.
//	  - chain: 1,000 goroutines, each blocked on the previous one's done
//	    channel and closing its own when that one closes; from the head's
//	    close to the last one's, per goroutine (median of 20 chains, ns).
//	    Go has no links: this is the same teardown, written by hand.
//	  - chain_first: as chain, with each goroutine making its done channel
//	    in its first run and handing it to the next (the Rust side links in
//	    each first step); the main goroutine closes the head's once all
//	    have, and the Ps idle, and is timed until the last one's closes.
//
// Go has no monitors to set and clear, so there is no `pair` shape.
package main

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

var base = time.Now()

func nowNs() int64 { return int64(time.Since(base)) }

func down(samples int) []int64 {
	lat := make([]int64, 0, samples)
	for i := 0; i < samples; i++ {
		done := make(chan struct{})
		var stamp int64
		go func() {
			stamp = nowNs()
			close(done)
		}()
		<-done
		lat = append(lat, nowNs()-stamp)
	}
	sortNs(lat)
	return lat
}

func sortNs(v []int64) { sort.Slice(v, func(a, b int) bool { return v[a] < v[b] }) }

// middleMean is the mean of the samples between the 10th and the 90th
// percentile, as the Rust side's `middle_mean`.
func middleMean(sorted []int64) float64 {
	lo, hi := len(sorted)/10, len(sorted)-len(sorted)/10
	sum := int64(0)
	for _, x := range sorted[lo:hi] {
		sum += x
	}
	return float64(sum) / float64(hi-lo)
}

// clockGap is what a window measured as two nowNs reads holds beyond
// itself: the gap between two back-to-back reads (mean of p10-p90 of
// 200,000 pairs), as the Rust side's `clock_gap_ns`.
func clockGap() float64 {
	v := make([]int64, 200000)
	for i := range v {
		a := nowNs()
		v[i] = nowNs() - a
	}
	sortNs(v)
	return middleMean(v)
}

func percentile(sorted []int64, p float64) int64 {
	return sorted[int(float64(len(sorted)-1)*p)]
}

const chainLen = 1000

func chain() float64 {
	head := make(chan struct{})
	prev := head
	for i := 0; i < chainLen; i++ {
		next := make(chan struct{})
		go func(prev, next chan struct{}) {
			<-prev
			close(next)
		}(prev, next)
		prev = next
	}
	// Let every goroutine reach its receive first.
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	close(head)
	<-prev
	return float64(time.Since(start).Nanoseconds()) / chainLen
}

// chainFirst is the Rust side's `chain_first`: each goroutine makes its
// link (its done channel, handed to the next) in its first run, not
// before it is started, and counts itself; once all are counted and the
// Ps idle, the main goroutine closes the head's channel and blocks on
// the last one's, timed there.
func chainFirst() float64 {
	head := make(chan struct{})
	var linked sync.WaitGroup
	linked.Add(chainLen)
	prev := make(chan chan struct{}, 1)
	prev <- head
	for i := 0; i < chainLen; i++ {
		mine := make(chan chan struct{}, 1)
		go func(from, to chan chan struct{}) {
			wait := <-from
			done := make(chan struct{})
			to <- done
			linked.Done()
			<-wait
			close(done)
		}(prev, mine)
		prev = mine
	}
	linked.Wait()
	last := <-prev
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	close(head)
	<-last
	return float64(time.Since(start).Nanoseconds()) / chainLen
}

func main() {
	lat := down(20000)
	fmt.Printf("down latency p50/p99 (mean p10-p90), ns: Go (done channel) %d/%d (%.1f)\n",
		percentile(lat, 0.5), percentile(lat, 0.99), middleMean(lat))
	fmt.Printf("  each window holds one clock read: two back-to-back reads differ by %.1f ns\n", clockGap())
	runs := make([]float64, 20)
	for i := range runs {
		runs[i] = chain()
	}
	sort.Float64s(runs)
	fmt.Printf("chain of %d torn down from its head, median ns per goroutine: Go %.1f\n", chainLen, runs[len(runs)/2])
	for i := range runs {
		runs[i] = chainFirst()
	}
	sort.Float64s(runs)
	fmt.Printf("chain_first of %d, linked in each first run, median ns per goroutine: Go %.1f\n", chainLen, runs[len(runs)/2])
}
