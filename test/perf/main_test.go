package perf

import (
	"os"
	"testing"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestMain lets the test binary double as caldera-scheduler: W5 starts its
// scheduler as a separate process (harness.StartSchedulerProcess, which
// re-executes this binary with the harness's environment variable), so that
// M1 reads the heap of the scheduler alone. A W5 child process
// (runIsolated, -perf.child) is an ordinary test run and starts it too.
func TestMain(m *testing.M) {
	harness.RunSchedulerProcess()
	os.Exit(m.Run())
}
