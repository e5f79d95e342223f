package faults_test

import (
	"os"
	"testing"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestMain lets the test binary double as caldera-scheduler: the tests start
// the scheduler as a separate process (harness.StartSchedulerProcess) so that
// they can SIGKILL it.
func TestMain(m *testing.M) {
	harness.RunSchedulerProcess()
	os.Exit(m.Run())
}
