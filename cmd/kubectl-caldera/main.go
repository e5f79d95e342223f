// Command kubectl-caldera shows Caldera's queues; see docs/kubectl-caldera.md.
package main

import (
	"fmt"
	"os"

	"github.com/caldera-sched/caldera/internal/kubectlcaldera"
)

func main() {
	if err := kubectlcaldera.NewCommand(os.Stdout).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
