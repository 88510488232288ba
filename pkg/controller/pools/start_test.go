package pools

import (
	"context"
	"sync"
	"testing"
)

// Informers' handlers ask the pools to be looked at again (resync) from
// their own goroutines, also while a term of leadership starts and sets
// its queue: under -race, neither may race with the other.
func TestResyncWhileATermStarts(t *testing.T) {
	c := New(Config{Cluster: &fakeReader{}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			c.term.resync()
		}
	}()
	c.Start(ctx)
	wg.Wait()
}
