package quality

import (
	"fmt"
	"maps"
	"path/filepath"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// gangForm says how a profile expresses a gang, if at all.
type gangForm int

const (
	// gangNone: a gang's pods are plain pods, placed as they come.
	gangNone gangForm = iota
	// gangCaldera: a scheduling.x-k8s.io/v1alpha1 PodGroup and the pod
	// label scheduling.x-k8s.io/pod-group.
	gangCaldera
	// gangUpstream: a scheduling.k8s.io/v1beta1 PodGroup with a gang
	// policy and the pod's spec.schedulingGroup, upstream's form.
	gangUpstream
)

// upstreamGates turns on upstream's gang scheduling (the GangScheduling
// plugin and the PodGroup API), for the apiserver and the scheduler alike.
const upstreamGates = "GenericWorkload=true"

// clientQPS is the scheduler's and the runner's API rate: the default
// 50/100 would throttle the bursts of a 64-member gang.
const clientQPS = 1000

// profile is one scheduler configuration under test.
type profile struct {
	name          string
	schedulerName string
	gang          gangForm
	// queues: create the trace's Queue objects (only Caldera reads them).
	queues     bool
	envOptions []harness.EnvOption
	// schedulerOptions configure the scheduler; compression is the trace's
	// time compression, which time-based settings are divided by.
	schedulerOptions func(repoRoot string, compression float64) []harness.SchedulerOption
	// external, when set, runs this command instead of an in-process
	// scheduler (external mode); schedulerOptions are then unused.
	external *harness.ExternalScheduler
	// onRequest: run only when -quality.profiles names it (a variant
	// measured against the shipped configuration, not a default run's).
	onRequest bool
}

// Profile names, used in the report and in -quality.profiles.
const (
	profileDefault  = "default"
	profileCaldera  = "caldera"
	profileUpstream = "upstream-gang"
	// profileLend is Caldera with lendIdleRoom on, on request: the
	// measurement behind lending's default (off).
	profileLend = "caldera-lend"
	// profileInstant is Caldera with reservationsPerQueue 0, on request:
	// admission decides for this instant only, as before reservations and
	// backfill, the measurement behind their default (on).
	profileInstant = "caldera-instant"
)

// starvationThresholdSeconds is the shipped configuration's
// (manifests/scheduler/config.yaml): the run divides it by the compression,
// so that it means the same in trace time.
const starvationThresholdSeconds = 300

// calderaProfile runs manifests/scheduler/config.yaml as shipped, but for the
// starvation bound, compressed with the trace, and the CalderaEnqueue args
// in enqueue.
func calderaProfile(name string, enqueue map[string]any) profile {
	return profile{
		name: name, schedulerName: harness.DefaultSchedulerName, gang: gangCaldera, queues: true,
		schedulerOptions: func(_ string, compression float64) []harness.SchedulerOption {
			args := map[string]any{"starvationThresholdSeconds": max(1, int(starvationThresholdSeconds/compression))}
			maps.Copy(args, enqueue)
			return []harness.SchedulerOption{raiseQPS, harness.WithPluginArgs("CalderaEnqueue", args)}
		},
	}
}

func defaultConfig(root string) string {
	return filepath.Join(root, "test", "quality", "testdata", "default-scheduler.yaml")
}

var raiseQPS = harness.WithSchedulerQPS(clientQPS, clientQPS)

// externalProfile is external mode: any scheduler, started by a shell
// command, with the pods' schedulerName and gang form the flags give.
// Caldera's Queue objects are created when its gangs are Caldera's
// PodGroups; upstream's form turns its API on in the apiserver. The
// command's own configuration is used as is: unlike the in-process caldera
// profile, its starvation bound is not divided by the compression.
func externalProfile(name, command, configFile, schedulerName, gang string) (profile, error) {
	p := profile{
		name: name, schedulerName: schedulerName,
		external: &harness.ExternalScheduler{Command: command, ConfigFile: configFile, QPS: clientQPS},
	}
	switch gang {
	case "none":
		p.gang = gangNone
	case "caldera":
		p.gang, p.queues = gangCaldera, true
	case "upstream":
		p.gang = gangUpstream
		p.envOptions = upstreamEnv()
	default:
		return profile{}, fmt.Errorf("gang form %q: want none, caldera or upstream", gang)
	}
	return p, nil
}

// upstreamEnv serves upstream's PodGroup API from the apiserver.
func upstreamEnv() []harness.EnvOption {
	return []harness.EnvOption{harness.WithAPIServerFlags(
		"--feature-gates="+upstreamGates,
		"--runtime-config=scheduling.k8s.io/v1beta1=true",
	)}
}

// profiles are the in-process profiles, in the order they run.
func profiles() []profile {
	lend := calderaProfile(profileLend, map[string]any{"lendIdleRoom": true})
	lend.onRequest = true
	instant := calderaProfile(profileInstant, map[string]any{"reservationsPerQueue": 0})
	instant.onRequest = true
	return []profile{
		{
			name: profileDefault, schedulerName: "default-scheduler", gang: gangNone,
			schedulerOptions: func(root string, _ float64) []harness.SchedulerOption {
				return []harness.SchedulerOption{harness.WithConfigFile(defaultConfig(root)), raiseQPS}
			},
		},
		calderaProfile(profileCaldera, nil),
		{
			name: profileUpstream, schedulerName: "default-scheduler", gang: gangUpstream,
			envOptions: upstreamEnv(),
			schedulerOptions: func(root string, _ float64) []harness.SchedulerOption {
				return []harness.SchedulerOption{harness.WithConfigFile(defaultConfig(root)), raiseQPS, harness.WithFeatureGates(upstreamGates)}
			},
		},
		lend,
		instant,
	}
}
