package perf

import (
	"path/filepath"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// GangKind says how a profile expresses a gang, if at all.
type GangKind string

const (
	// GangNone creates a gang's pods as plain pods: the default scheduler
	// runs "the same pods without gang semantics".
	GangNone GangKind = "none"
	// GangCaldera is a scheduling.x-k8s.io/v1alpha1 PodGroup plus the pod
	// label scheduling.x-k8s.io/pod-group.
	GangCaldera GangKind = "caldera"
	// GangUpstream is a scheduling.k8s.io/v1beta1 PodGroup with a gang
	// policy plus the pod's spec.schedulingGroup.podGroupName, as upstream's
	// scheduler_perf gangscheduling workloads build them.
	GangUpstream GangKind = "upstream"
)

// Profile names, used in the report and in -perf.profiles.
const (
	ProfileDefault = "default"
	ProfileCaldera = "caldera"
	// ProfileCalderaGangsOnly is Caldera's profile with admitSingletons off:
	// plain pods skip queue admission (and its per-pod Admitted Event).
	ProfileCalderaGangsOnly = "caldera-gangs-only"
	// ProfileCalderaNoPlacement is Caldera's profile without the
	// CalderaGangPlacement Score plugin: W2 against it prices the plugin.
	ProfileCalderaNoPlacement = "caldera-no-placement"
	// ProfileCalderaNoNomination is Caldera's profile with kube-scheduler's
	// NominatedNodeNameForExpectation feature gate (beta, on since 1.35) off:
	// it prices the nominatedNodeName write upstream makes for every pod that
	// waits in Permit, i.e. every gang member but the last.
	ProfileCalderaNoNomination = "caldera-no-nomination"
	ProfileUpstream            = "upstream-gang"
	ProfileExternal            = "external"
)

// Feature gates of the profiles that change any, for the apiserver and the
// scheduler alike: upstream's gang scheduling (its GangScheduling plugin and
// PodGroup API) is behind GenericWorkload in 1.37.
const (
	upstreamGates     = "GenericWorkload=true"
	noNominationGates = "NominatedNodeNameForExpectation=false"
)

// schedulerQPS is the scheduler's and the workload client's API rate, as in
// upstream's scheduler_perf: the default 50/100 would cap any scheduler
// near 50 pods/s.
const schedulerQPS = 5000

// Profile is one scheduler configuration under test.
type Profile struct {
	// Name identifies the profile in the report.
	Name string
	// SchedulerName is the spec.schedulerName of the workload's pods.
	SchedulerName string
	// Gang is how this profile's gangs are expressed.
	Gang GangKind
	// GangOnly profiles run only on workloads that have gangs.
	GangOnly bool
	// envOptions start the control plane (feature gates, API versions).
	envOptions []harness.EnvOption
	// schedulerOptions configure the scheduler, in-process or in a process
	// of its own; repoRoot locates configuration files.
	schedulerOptions func(repoRoot string) []harness.SchedulerOption
}

// raiseQPS sets the scheduler's client QPS and burst to schedulerQPS.
var raiseQPS = harness.WithSchedulerQPS(schedulerQPS, schedulerQPS)

// defaultConfig is the default-profile configuration shipped in testdata.
func defaultConfig(repoRoot string) string {
	return filepath.Join(repoRoot, "test", "perf", "testdata", "default-scheduler.yaml")
}

// Profiles returns the in-process profiles in the order they run.
func Profiles() []Profile {
	return []Profile{
		{
			Name:          ProfileDefault,
			SchedulerName: "default-scheduler",
			Gang:          GangNone,
			schedulerOptions: func(root string) []harness.SchedulerOption {
				return []harness.SchedulerOption{harness.WithConfigFile(defaultConfig(root)), raiseQPS}
			},
		},
		{
			Name:          ProfileCaldera,
			SchedulerName: harness.DefaultSchedulerName,
			Gang:          GangCaldera,
			schedulerOptions: func(string) []harness.SchedulerOption {
				// manifests/scheduler/config.yaml as shipped, QPS raised.
				return []harness.SchedulerOption{raiseQPS}
			},
		},
		{
			Name:          ProfileCalderaGangsOnly,
			SchedulerName: harness.DefaultSchedulerName,
			Gang:          GangCaldera,
			schedulerOptions: func(string) []harness.SchedulerOption {
				return []harness.SchedulerOption{
					raiseQPS,
					harness.WithPluginArgs("CalderaEnqueue", map[string]any{"admitSingletons": false}),
				}
			},
		},
		{
			Name:          ProfileCalderaNoPlacement,
			SchedulerName: harness.DefaultSchedulerName,
			Gang:          GangCaldera,
			schedulerOptions: func(string) []harness.SchedulerOption {
				return []harness.SchedulerOption{
					raiseQPS,
					harness.WithoutPlugin("CalderaGangPlacement"),
				}
			},
		},
		{
			Name:          ProfileCalderaNoNomination,
			SchedulerName: harness.DefaultSchedulerName,
			Gang:          GangCaldera,
			GangOnly:      true,
			// As for upstream-gang: the gate for the apiserver and the
			// scheduler alike.
			envOptions: []harness.EnvOption{harness.WithAPIServerFlags("--feature-gates=" + noNominationGates)},
			schedulerOptions: func(string) []harness.SchedulerOption {
				return []harness.SchedulerOption{raiseQPS, harness.WithFeatureGates(noNominationGates)}
			},
		},
		{
			Name:          ProfileUpstream,
			SchedulerName: "default-scheduler",
			Gang:          GangUpstream,
			GangOnly:      true,
			// The apiserver copies --feature-gates into the process-wide
			// gate for the test's duration, which an in-process scheduler
			// reads (WithFeatureGates checks it); a scheduler process (W5,
			// W6) gets the same --feature-gates.
			envOptions: []harness.EnvOption{harness.WithAPIServerFlags(
				"--feature-gates="+upstreamGates,
				"--runtime-config=scheduling.k8s.io/v1beta1=true",
			)},
			schedulerOptions: func(root string) []harness.SchedulerOption {
				return []harness.SchedulerOption{
					harness.WithConfigFile(defaultConfig(root)), raiseQPS,
					harness.WithFeatureGates(upstreamGates),
				}
			},
		},
	}
}
