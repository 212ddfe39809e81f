package events

import (
	"sync"
	"testing"
	"time"
)

func TestIDsNeverGoBackwardsAcrossGoroutines(t *testing.T) {
	src := NewIDSource(nil, nil)
	const workers, per = 8, 2000
	var mu sync.Mutex
	var all []ID
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			local := make([]ID, 0, per)
			for i := 0; i < per; i++ {
				local = append(local, src.New())
			}
			for i := 1; i < len(local); i++ {
				if local[i].Compare(local[i-1]) <= 0 {
					t.Errorf("id %s after %s on one goroutine", local[i], local[i-1])
					return
				}
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	seen := map[ID]bool{}
	for _, id := range all {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

func TestIDsSurviveAClockStepBack(t *testing.T) {
	now := time.Unix(1750000000, 0)
	src := NewIDSource(func() time.Time { return now }, nil)
	a := src.New()
	now = now.Add(-time.Hour)
	b := src.New()
	if b.Compare(a) <= 0 {
		t.Fatalf("after the clock stepped back: %s then %s", a, b)
	}
}
