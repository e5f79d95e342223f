// Command caldera-scheduler is kube-scheduler with Caldera's plugins compiled in.
// It takes every upstream flag (--config, --v, --leader-elect, ...).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/caldera-sched/caldera/pkg/plugins/registry"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(registry.Options()...)))
}
