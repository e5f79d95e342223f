package cache

import (
	"context"
	"fmt"
)

// Slots is a counting semaphore shared by the profiles of one scheduler.
type Slots chan struct{}

// TryAcquire takes a slot if one is free.
func (s Slots) TryAcquire() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire waits for a slot or for ctx to end.
func (s Slots) Acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release frees a slot taken by TryAcquire or Acquire.
func (s Slots) Release() { <-s }

// BindSlots returns the scheduler's binding slots, n of them: created by the
// first caller (the first profile's CalderaBinder); a later caller asking
// for another size is refused, since one bound holds for the whole process.
func (c *Cache) BindSlots(n int) (Slots, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bindSlots == nil {
		c.bindSlots = make(Slots, n)
	}
	if cap(c.bindSlots) != n {
		return nil, fmt.Errorf("%d differs from another profile's %d: the bound is shared by every profile", n, cap(c.bindSlots))
	}
	return c.bindSlots, nil
}
