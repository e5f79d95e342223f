package feed

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// TestStartRunsStepsAtOnce: each step lists from the API server and waits
// for it, so Start runs them at the same time; one after another, a
// restart's time to its first bind was their sum. Here the first step
// finishes only once the second has begun, which steps run in turn never
// do (the first would give up after the bound and fail the test).
func TestStartRunsStepsAtOnce(t *testing.T) {
	f := &Feed{}
	second := make(chan struct{})
	var order []string
	done := make(chan string, 2)
	if err := f.setUp("first", func(context.Context, klog.Logger) error {
		select {
		case <-second:
			done <- "first"
			return nil
		case <-time.After(time.Minute):
			return errors.New("the second step did not begin while the first waited")
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.setUp("second", func(context.Context, klog.Logger) error {
		// Recorded before the first may go on: sent after the close, the
		// two sends raced and the order read wrong one time in many.
		done <- "second"
		close(second)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	close(done)
	for s := range done {
		order = append(order, s)
	}
	if len(order) != 2 || order[0] != "second" {
		t.Errorf("steps finished in order %v, want second before first", order)
	}
}

// TestStartReportsEveryStepsError: one step failing (a CRD not installed)
// does not hide another's failure, and the error names both, in the order
// the steps were set up.
func TestStartReportsEveryStepsError(t *testing.T) {
	f := &Feed{}
	errA, errB := errors.New("PodGroups did not sync"), errors.New("Queues did not sync")
	for _, step := range []struct {
		what string
		err  error
	}{{"a", errA}, {"ok", nil}, {"b", errB}} {
		if err := f.setUp(step.what, func(context.Context, klog.Logger) error {
			return step.err
		}); err != nil {
			t.Fatal(err)
		}
	}
	err := f.Start(t.Context())
	if !errors.Is(err, errA) || !errors.Is(err, errB) {
		t.Fatalf("Start = %v, want both steps' errors", err)
	}
	if got, want := err.Error(), errA.Error()+"\n"+errB.Error(); got != want {
		t.Errorf("Start's error reads %q, want %q", got, want)
	}
	// Start runs once: a later call neither reruns a step nor fails.
	if err := f.Start(t.Context()); err != nil {
		t.Errorf("second Start = %v, want nil", err)
	}
	if err := f.setUp("late", func(context.Context, klog.Logger) error { return nil }); err == nil {
		t.Error("setUp after Start succeeded; nothing would run the step")
	}
}
