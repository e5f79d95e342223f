package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/kwok/kustomize/stage/node/fast"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/client"
	"sigs.k8s.io/yaml"
)

// completeAfterAnnotation, on a pod, makes the sandbox's KWOK complete it
// (phase Succeeded) this long after it became Running, for example "15s".
// Pods without it run until deleted.
const completeAfterAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"

// podCompleteStage is KWOK's pod-complete stage for pods that carry
// completeAfterAnnotation (KWOK's own stages complete only pods of Jobs).
const podCompleteStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: caldera-sandbox-pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.annotations["` + completeAfterAnnotation + `"]'
      operator: 'Exists'
  delay:
    durationMilliseconds: 1000
    durationFrom:
      expressionFrom: '.metadata.annotations["` + completeAfterAnnotation + `"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: PodCompleted
        type: Ready
      phase: Succeeded
`

// jobPodCompleteStage completes the pods of Jobs that carry no
// completeAfterAnnotation runTime after they run, so that any Job applied
// to the sandbox (examples/, a user's own) reaches Complete, as with
// kubelets, and ttl-after-finished cleans it up. Its status is
// podCompleteStage's.
func jobPodCompleteStage(runTime time.Duration) string {
	i := strings.Index(podCompleteStage, "  next:\n")
	return `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: caldera-sandbox-job-pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values:
      - 'Job'
    - key: '.metadata.annotations["` + completeAfterAnnotation + `"]'
      operator: 'DoesNotExist'
  delay:
    durationMilliseconds: ` + strconv.FormatInt(runTime.Milliseconds(), 10) + `
` + podCompleteStage[i:]
}

// startKWOK runs KWOK's controllers for every node: nodes become Ready, pods
// bound to them become Running, annotated pods complete, Job pods complete
// jobRunTime after they run (never with 0), deleted pods go.
func startKWOK(ctx context.Context, kubeconfig string, verbose bool, jobRunTime time.Duration) error {
	stages, err := kwokStages(jobRunTime)
	if err != nil {
		return err
	}
	cfg, err := kwokControllerConfig(kubeconfig, stages)
	if err != nil {
		return err
	}
	ctx = withKWOKLogger(ctx, verbose)
	ctr, err := controllers.NewController(cfg)
	if err != nil {
		return fmt.Errorf("creating KWOK controller: %w", err)
	}
	if err := ctr.Start(ctx); err != nil {
		return fmt.Errorf("starting KWOK controller: %w", err)
	}
	return nil
}

// kwokStages decodes the stages startKWOK plays, grouped by the resource
// they act on, as KWOK's controller takes them; the Job-pod stage only
// with a jobRunTime.
func kwokStages(jobRunTime time.Duration) (map[internalversion.StageResourceRef][]*internalversion.Stage, error) {
	srcs := []string{fast.DefaultNodeInit, podfast.DefaultPodReady, podCompleteStage, podfast.DefaultPodDelete}
	if jobRunTime > 0 {
		srcs = append(srcs, jobPodCompleteStage(jobRunTime))
	}
	var stages []*internalversion.Stage
	for _, src := range srcs {
		var s v1alpha1.Stage
		if err := yaml.UnmarshalStrict([]byte(src), &s); err != nil {
			return nil, fmt.Errorf("decoding KWOK stage: %w", err)
		}
		in, err := internalversion.ConvertToInternalStage(&s)
		if err != nil {
			return nil, fmt.Errorf("converting KWOK stage %s: %w", s.Name, err)
		}
		stages = append(stages, in)
	}
	groups := map[internalversion.StageResourceRef][]*internalversion.Stage{}
	for _, s := range stages {
		groups[s.Spec.ResourceRef] = append(groups[s.Spec.ResourceRef], s)
	}
	return groups, nil
}

// kwokControllerConfig builds the clients KWOK's controller needs from
// kubeconfig and its configuration: it manages every node, plays stages
// and fakes the nodes' and pods' addresses.
func kwokControllerConfig(kubeconfig string, stages map[internalversion.StageResourceRef][]*internalversion.Stage) (controllers.Config, error) {
	cs, err := client.NewClientset("", kubeconfig)
	if err != nil {
		return controllers.Config{}, err
	}
	restConfig, err := cs.ToRESTConfig()
	if err != nil {
		return controllers.Config{}, err
	}
	dynamicClient, err := cs.ToDynamicClient()
	if err != nil {
		return controllers.Config{}, err
	}
	restMapper, err := cs.ToRESTMapper()
	if err != nil {
		return controllers.Config{}, err
	}
	typedClient, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return controllers.Config{}, err
	}
	kwokClient, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return controllers.Config{}, err
	}
	return controllers.Config{
		Clock:                      clock.RealClock{},
		DynamicClient:              dynamicClient,
		RESTClient:                 typedClient.CoreV1().RESTClient(),
		RESTMapper:                 restMapper,
		ImpersonatingDynamicClient: cs.ToImpersonatingDynamicClient(),
		ImpersonatingTypedClient:   cs.ToImpersonatingTypedClient(),
		TypedClient:                typedClient,
		TypedKwokClient:            kwokClient,
		ManageAllNodes:             true,
		CIDR:                       "10.244.0.1/16",
		NodeIP:                     "10.0.0.1",
		LocalStages:                stages,
		PodPlayStageParallelism:    4,
		NodePlayStageParallelism:   2,
		NodeLeaseParallelism:       2,
		PodsOnNodeSyncParallelism:  2,
		ID:                         "caldera-sandbox",
	}, nil
}

// withKWOKLogger gives ctx the logger KWOK's controllers log to: where
// klog's lines go with --log-file (verbose), else errors only, discarded.
func withKWOKLogger(ctx context.Context, verbose bool) context.Context {
	var w io.Writer = io.Discard
	level := kwoklog.LevelError
	if verbose {
		w = stderrWriter{}
		level = kwoklog.LevelInfo
	}
	return kwoklog.NewContext(ctx, kwoklog.NewLogger(w, level))
}
