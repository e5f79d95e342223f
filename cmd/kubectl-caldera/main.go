// Command kubectl-caldera shows Caldera's queues; see docs/kubectl-caldera.md.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/caldera-sched/caldera/internal/kubectlcaldera"
)

func main() {
	err := kubectlcaldera.NewCommand(os.Stdout).Execute()
	if errors.Is(err, kubectlcaldera.ErrWouldNotStart) {
		// what-if printed its answer; the exit code is for scripts.
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
