package admission

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// passes records when each pass ran (the bubble's fake clock).
type passes struct {
	mu sync.Mutex
	at []time.Time
}

func (p *passes) AdmissionPass(_ klog.Logger, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at = append(p.at, now)
}

func (p *passes) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.at)
}

// ready is a DoneChecker closed by the test.
type ready chan struct{}

func (r ready) Name() string          { return "test" }
func (r ready) Done() <-chan struct{} { return r }

func TestLoop(t *testing.T) {
	const period = time.Second
	for _, tt := range []struct {
		name string
		// run drives the loop; it returns the passes it expects.
		run func(kick func(), open func()) int
	}{
		{"no pass before ready, however long or often kicked", func(kick, _ func()) int {
			kick()
			time.Sleep(10 * period)
			return 0
		}},
		{"a pass every period once ready", func(_, open func()) int {
			open()
			time.Sleep(3*period + period/2)
			return 3
		}},
		{"a kick runs a pass after the debounce, not before", func(kick, open func()) int {
			open()
			kick()
			time.Sleep(Debounce - time.Millisecond)
			synctest.Wait()
			return 0
		}},
		{"a burst of kicks is one pass", func(kick, open func()) int {
			open()
			kick()
			time.Sleep(Debounce / 2)
			for range 10 {
				kick() // dropped but one: the buffer holds one kick
			}
			time.Sleep(Debounce/2 + time.Millisecond)
			synctest.Wait()
			// The kick held in the buffer runs one more pass, debounced.
			time.Sleep(Debounce + time.Millisecond)
			return 2
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &passes{}
				kicks := make(chan struct{}, 1)
				r := make(ready)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() {
					defer close(done)
					Loop{Pass: p, Period: period, Kicks: kicks, Ready: []cache.DoneChecker{r}}.Run(ctx)
				}()
				kick := func() {
					select {
					case kicks <- struct{}{}:
					default:
					}
				}
				want := tt.run(kick, func() { close(r) })
				synctest.Wait()
				if got := p.count(); got != want {
					t.Errorf("%d passes, want %d (at %v)", got, want, p.at)
				}
				cancel()
				<-done // Run returns when ctx ends
			})
		})
	}
}
