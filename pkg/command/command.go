// Package command builds the caldera-scheduler command: kube-scheduler's, with
// Caldera's plugins registered and its cache following the scheduler's leader
// election. cmd/scheduler runs it; integration tests re-execute their own
// binary to run it as a separate process.
package command

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as upstream's binary
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go and leader-election metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // kubernetes_build_info
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/caldera-sched/caldera/pkg/plugins/registry"
)

// New returns the caldera-scheduler command. It is app.NewSchedulerCommand of kube-scheduler v1.37.2 with two
// steps added between app.Setup and app.Run: Caldera's cache is told which
// leader elector the scheduler runs, so that PodGroup and Queue status is
// written by the replica that schedules and by no other; and the machinery
// the plugins share (the cache's informers, the admission loop, the status
// writer) is started, once, now that every profile's plugins are built. app.NewSchedulerCommand
// keeps its options and the completed config to itself, so the command is
// rebuilt here from the same public pieces (options, Setup, Run); the flags,
// help and behaviour are upstream's.
func New() *cobra.Command {
	opts := options.NewOptions()
	cmd := &cobra.Command{
		Use: "caldera-scheduler",
		Long: `caldera-scheduler is kube-scheduler with Caldera's batch plugins compiled in:
queue admission (CalderaEnqueue), queue fairness (CalderaQueueSort), gang
scheduling (CalderaGang), cross-queue reclaim (CalderaReclaim), gang
placement (CalderaGangPlacement), bounded binding (CalderaBinder) and room
held for reservations (CalderaReservation). It takes every kube-scheduler
flag; enable the
plugins in a profile of the KubeSchedulerConfiguration given with --config.`,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			// Feature gates must be set before RunE.
			return opts.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, opts)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if len(arg) > 0 {
					return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	fs := cmd.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	if err := cmd.MarkFlagFilename("config", "yaml", "yml", "json"); err != nil {
		klog.Background().Error(err, "Failed to mark flag filename")
	}
	return cmd
}

// run is upstream's runCommand plus FollowLeaderElection and Start.
func run(cmd *cobra.Command, opts *options.Options) error {
	verflag.PrintAndExitIfRequested()
	fg := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := logsapi.ValidateAndApply(opts.Logs, fg); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	cliflag.PrintFlags(cmd.Flags())
	if opts.InformerName == nil {
		name, err := cache.NewInformerName("kube-scheduler")
		if err != nil {
			return err
		}
		opts.InformerName = name
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()

	plugins := registry.New()
	cc, sched, err := app.Setup(ctx, opts, plugins.Options()...)
	if err != nil {
		return err
	}
	plugins.FollowLeaderElection(cc)
	if err := plugins.Start(ctx); err != nil {
		return err
	}
	fg.(featuregate.MutableFeatureGate).AddMetrics()
	opts.ComponentGlobalsRegistry.AddMetrics()
	return app.Run(ctx, cc, sched)
}
