package perf

import (
	"os"
	"testing"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestMain lets the test binary double as caldera-scheduler: W5 and W6
// start their scheduler as a separate process (harness.StartSchedulerProcess,
// which re-executes this binary with the harness's environment variable), so
// that M1 and W6's windows read the heap of the scheduler alone. A child
// process (runIsolated, -perf.child) is an ordinary test run and starts it
// too.
func TestMain(m *testing.M) {
	harness.RunSchedulerProcess()
	os.Exit(m.Run())
}
