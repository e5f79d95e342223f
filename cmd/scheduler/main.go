// Command caldera-scheduler is kube-scheduler with Caldera's plugins compiled in.
// It takes every upstream flag (--config, --v, --leader-elect, ...).
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/caldera-sched/caldera/pkg/command"
)

func main() {
	os.Exit(cli.Run(command.New()))
}
