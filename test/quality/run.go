package quality

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	pgapi "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pginformers "sigs.k8s.io/scheduler-plugins/pkg/generated/informers/externalversions"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/test/integration/harness"
	"github.com/caldera-sched/caldera/test/quality/score"
	"github.com/caldera-sched/caldera/test/quality/trace"
)

const (
	// jobLabel names a pod's trace job; the runner watches only such pods.
	jobLabel = "quality.caldera.dev/job"
	// runTimeAnnotation is how long (wall time, a Go duration) a pod's job
	// runs once all its pods are bound; the completer reads it from the
	// pod that completes the gang.
	runTimeAnnotation = "quality.caldera.dev/run-time"
	// memPerCore: CPU, not memory, is the scarce resource (nodes have 4 GiB
	// per core).
	memPerCore = 2 << 30
	// sampleEvery is the wall-time sampling period of allocations.
	sampleEvery = time.Second
	// createWorkers bounds the jobs being created at once.
	createWorkers = 8
)

// options are one run's settings.
type options struct {
	// compression divides the trace's arrival and run times.
	compression float64
	// drainEnd is the trace time at which a run stops even if jobs remain.
	drainEnd time.Duration
	// stall stops a run early (wall time) when nothing was bound, finished
	// or evicted for this long while no job runs: nothing ever will again.
	stall time.Duration
}

// runner plays a trace against one profile's scheduler and records what
// happens. It stands in for the kubelets and the job controller: a job's
// pods succeed together, its run time after the last of them is bound (a
// gang's work progresses only when every member runs); an evicted pod is
// created again under a new name, as a Job controller would, and its job's
// run starts over once all its pods are bound again. A job's declared
// limit (trace.Job.Limit) is on its pods as runlimit.Annotation, compressed
// like its run time and never below it. Nothing enforces it, as nothing
// enforces the annotation in a cluster; a limit counts from the pod's
// start, so a gang member bound before the last one holds its room past an
// exact (1x) limit by that spread, as it would in a cluster.
type runner struct {
	env   *harness.Env
	p     profile
	tr    trace.Trace
	opts  options
	start time.Time

	mu        sync.Mutex
	jobs      []*jobState
	groups    map[string]*jobState // gangs, by namespace/name
	pods      map[string]*podState // by namespace/name
	evictions int
	// evictionLog: when each eviction happened, and in which queue;
	// victims: the same evictions' pods, for attributeEvictions.
	evictionLog []score.Eviction
	victims     []victim
	partialNS   float64 // node-seconds, trace time
	lastChange  time.Time
	submitted   int // jobs whose pods are all created
	running     int // jobs started and not finished
	finished    int
	samples     []score.Sample
	err         error
}

type jobState struct {
	job trace.Job
	ns  string
	// live are the job's current pods (recreations replace evicted ones).
	live map[string]*podState
	// bound counts live pods that are bound; partialSince is when the
	// first of them was, while the job has not started.
	bound        int
	partialSince time.Time
	maxPartial   time.Duration
	// start is when the current run began (zero: not running); firstStart
	// the first one, which ends the job's wait.
	start, firstStart, end time.Time
	epoch                  int
	recreated              int
	evicted                int
	// completing: the current run has ended and its pods are being set
	// Succeeded; an eviction now takes a pod whose work is done.
	completing bool
	// firstETA is the first expected start seen: a gang's on its
	// PodGroup (qapi.ExpectedStartAnnotation), a single pod's in its
	// NotAdmitted verdict; zero: none yet. predLimited: every other job
	// holding room then declared a limit.
	firstETA    time.Time
	predLimited bool
	// firstEstimate is the first estimated start seen on its PodGroup
	// (qapi.EstimatedStartAnnotation: it waited for jobs without a limit);
	// zero: none.
	firstEstimate time.Time
	// verdicts: what the scheduler told it (readEvents), with an ETA only.
	verdicts []score.Verdict
}

type podState struct {
	job       *jobState
	name      string
	cpu       int64
	node      string
	boundAt   time.Time
	succeeded bool
}

func (r *runner) traceSeconds(t time.Time) float64 {
	if t.IsZero() {
		return -1
	}
	return t.Sub(r.start).Seconds() * r.opts.compression
}

func (r *runner) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// runProfile plays tr under p on a fresh control plane.
func runProfile(t *testing.T, p profile, tr trace.Trace, opts options) score.Run {
	ctx := t.Context()
	env := harness.StartWith(t, append([]harness.EnvOption{harness.WithClientQPS(clientQPS, clientQPS)}, p.envOptions...)...)
	out := score.Run{Profile: p.name, Compression: opts.compression, CapacityCPU: tr.Params.CapacityCPU(), NodeCPU: tr.Params.NodeCPU}
	if err := setupTenants(ctx, env, p, tr); err != nil {
		out.Error = err.Error()
		return out
	}
	if p.external != nil {
		if _, err := env.StartExternal(t, *p.external); err != nil {
			out.Error = err.Error()
			return out
		}
	} else {
		env.StartScheduler(t, p.schedulerOptions(env.RepoRoot, opts.compression)...)
	}
	env.AddNodes(t, tr.Params.Nodes, strconv.FormatInt(tr.Params.NodeCPU/1000, 10), fmt.Sprintf("%dGi", tr.Params.NodeCPU/1000*4))
	if p.external != nil {
		// The trace's clock starts at the first submission: an external
		// scheduler still starting then would count its start-up as wait.
		if err := probe(ctx, env, p); err != nil {
			out.Error = err.Error()
			return out
		}
	}

	r := &runner{env: env, p: p, tr: tr, opts: opts, pods: map[string]*podState{}, groups: map[string]*jobState{}}
	for _, j := range tr.Jobs {
		js := &jobState{job: j, ns: j.Queue, live: map[string]*podState{}}
		r.jobs = append(r.jobs, js)
		if j.Size > 1 {
			r.groups[js.ns+"/"+j.Name()] = js
		}
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if err := r.watch(watchCtx); err != nil {
		out.Error = err.Error()
		return out
	}
	r.start = time.Now()
	r.lastChange = r.start
	go r.submit(watchCtx)
	out.Error = r.loop(watchCtx, t)
	stopWatch()
	r.explainUnfinished(t)
	if err := r.readEvents(ctx); err != nil {
		t.Logf("%s: reading the scheduler's Events (evictions' causes, verdicts): %v", p.name, err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for _, js := range r.jobs {
		if js.start.IsZero() && js.bound > 0 {
			r.addPartial(js, now)
		}
		out.Jobs = append(out.Jobs, score.Job{
			ID: js.job.ID, Queue: js.job.Queue, Size: js.job.Size,
			Arrival: js.job.Arrival.Seconds(), Start: r.traceSeconds(js.firstStart), End: r.traceSeconds(js.end),
			Evicted: js.evicted, PartialSeconds: js.maxPartial.Seconds() * opts.compression,
		})
		if !js.firstEstimate.IsZero() {
			out.Jobs[len(out.Jobs)-1].FirstEstimate = ptr.To(r.traceSeconds(js.firstEstimate))
		}
		if !js.firstETA.IsZero() {
			out.Jobs[len(out.Jobs)-1].FirstETA = ptr.To(r.traceSeconds(js.firstETA))
			out.Jobs[len(out.Jobs)-1].PredecessorsLimited = js.predLimited
			out.Jobs[len(out.Jobs)-1].Verdicts = js.verdicts
		}
	}
	out.Samples = r.samples
	out.PartialNodeSeconds = r.partialNS
	out.Evictions = r.evictions
	out.EvictionLog = r.evictionLog
	out.End = r.traceSeconds(now)
	if out.Error == "" && r.err != nil {
		out.Error = r.err.Error()
	}
	return out
}

// setupTenants creates a namespace per queue, labelled with its queue, and
// for Caldera the Queue objects.
func setupTenants(ctx context.Context, env *harness.Env, p profile, tr trace.Trace) error {
	for _, q := range tr.Params.Queues {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: q.Name, Labels: map[string]string{qapi.QueueLabel: q.Name}}}
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", q.Name, err)
		}
		if !p.queues {
			continue
		}
		spec := qapi.QueueSpec{Weight: q.Weight, Reclaimable: ptr.To(q.Reclaimable)}
		if g := tr.Params.GuaranteeCPU(q); g > 0 {
			spec.Guarantee = v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(g, resource.DecimalSI)}
		}
		obj := &qapi.Queue{ObjectMeta: metav1.ObjectMeta{Name: q.Name}, Spec: spec}
		if _, err := env.QueueClient().SchedulingV1alpha1().Queues().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating queue %s: %w", q.Name, err)
		}
	}
	return nil
}

// watch follows the trace's pods (binds and deletions) and, for Caldera,
// the expected starts its gangs' PodGroups and its single pods' verdicts
// give.
func (r *runner) watch(ctx context.Context) error {
	f := informers.NewSharedInformerFactoryWithOptions(r.env.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = jobLabel
	}))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.onPod(obj.(*v1.Pod)) },
		UpdateFunc: func(_, obj any) { r.onPod(obj.(*v1.Pod)) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok {
				r.onDelete(pod)
			}
		},
	})
	if err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("pod informer did not sync")
	}
	if r.p.gang != gangCaldera {
		return nil
	}
	// Caldera's PodGroups: the first expected start each gang is given.
	pgf := pginformers.NewSharedInformerFactory(r.env.PGClient, 0)
	pgInf := pgf.Scheduling().V1alpha1().PodGroups().Informer()
	onGroup := func(obj any) {
		if pg, ok := obj.(*pgapi.PodGroup); ok {
			r.onGroup(pg)
		}
	}
	if _, err := pgInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onGroup,
		UpdateFunc: func(_, obj any) { onGroup(obj) },
	}); err != nil {
		return err
	}
	pgf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pgInf.HasSynced) {
		return errors.New("PodGroup informer did not sync")
	}
	// A single pod has no PodGroup: its expected start is in its
	// NotAdmitted verdict ("...; reserved from T on nodes"), an Event.
	ef := informers.NewSharedInformerFactory(r.env.Client, 0)
	evInf := ef.Events().V1().Events().Informer()
	onEvent := func(obj any) {
		if ev, ok := obj.(*eventsv1.Event); ok {
			r.onEvent(ev)
		}
	}
	if _, err := evInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onEvent,
		UpdateFunc: func(_, obj any) { onEvent(obj) },
	}); err != nil {
		return err
	}
	ef.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), evInf.HasSynced) {
		return errors.New("Event informer did not sync")
	}
	return nil
}

func (r *runner) onPod(pod *v1.Pod) {
	if pod.Spec.NodeName == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.pods[pod.Namespace+"/"+pod.Name]
	if ps == nil || !ps.boundAt.IsZero() {
		return
	}
	now := time.Now()
	r.lastChange = now
	ps.boundAt = now
	ps.node = pod.Spec.NodeName
	js := ps.job
	js.bound++
	if js.bound == 1 && js.start.IsZero() {
		js.partialSince = now
	}
	if js.bound < js.job.Size || !js.start.IsZero() {
		return
	}
	// The job's last pod: it runs from now.
	r.addPartial(js, now)
	js.start = now
	if js.firstStart.IsZero() {
		js.firstStart = now
	}
	r.running++
	runFor, err := time.ParseDuration(pod.Annotations[runTimeAnnotation])
	if err != nil {
		r.err = fmt.Errorf("pod %s/%s: %s: %w", pod.Namespace, pod.Name, runTimeAnnotation, err)
		return
	}
	epoch := js.epoch
	names := make([]string, 0, len(js.live))
	for _, p := range js.live {
		names = append(names, p.name)
	}
	go r.started(js.ns, names, now)
	time.AfterFunc(runFor, func() { r.complete(js, epoch) })
}

// started writes status.startTime on a job's pods as the kubelet this
// runner stands in for does when it starts them: the scheduler learns
// how long jobs without a limit run from it. A pod gone since (evicted)
// is skipped.
func (r *runner) started(ns string, names []string, at time.Time) {
	patch := fmt.Appendf(nil, `{"status":{"startTime":%q}}`, at.UTC().Format(time.RFC3339))
	for _, name := range names {
		_, err := r.env.Client.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil && !apierrors.IsNotFound(err) {
			r.fail(fmt.Errorf("starting pod %s/%s: %w", ns, name, err))
			return
		}
	}
}

// addPartial adds what the bound pods of js, a job not running, held
// since they were bound, and ends its partial window.
func (r *runner) addPartial(js *jobState, now time.Time) {
	if js.job.Size > 1 {
		for _, ps := range js.live {
			if !ps.boundAt.IsZero() {
				r.partialNS += r.nodeSeconds(ps, now)
			}
		}
		js.maxPartial = max(js.maxPartial, now.Sub(js.partialSince))
	}
	js.partialSince = time.Time{}
}

// nodeSeconds is the node-seconds (trace time) ps has held since it was bound.
func (r *runner) nodeSeconds(ps *podState, now time.Time) float64 {
	return now.Sub(ps.boundAt).Seconds() * r.opts.compression * float64(ps.cpu) / float64(r.tr.Params.NodeCPU)
}

// complete marks every pod of js Succeeded, as its kubelets would when the
// job's run ends, unless the run was cut short by an eviction.
func (r *runner) complete(js *jobState, epoch int) {
	r.mu.Lock()
	if js.epoch != epoch {
		r.mu.Unlock()
		return
	}
	var pods []*podState
	for _, ps := range js.live {
		pods = append(pods, ps)
	}
	js.completing = true
	r.mu.Unlock()
	patch := []byte(`{"status":{"phase":"Succeeded"}}`)
	for _, ps := range pods {
		_, err := r.env.Client.CoreV1().Pods(js.ns).Patch(context.Background(), ps.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			// Evicted while the run ended: its work was done (onDelete).
			continue
		}
		if err != nil {
			r.fail(fmt.Errorf("completing pod %s/%s: %w", js.ns, ps.name, err))
			return
		}
		r.mu.Lock()
		ps.succeeded = true
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	js.completing = false
	if js.epoch != epoch {
		// An eviction cut this run short after all: the job runs again.
		return
	}
	now := time.Now()
	js.end = now
	r.lastChange = now
	r.running--
	r.finished++
}

// onDelete: the runner never deletes a pod, so a deletion of an unfinished
// pod is the scheduler's eviction (reclaim, preemption, or a pod past its
// limit). A pod evicted while its job's ended run is being completed had
// done its work: the job finishes, and the pod is not created again (its
// gang's other members having succeeded, it could never start alone).
func (r *runner) onDelete(pod *v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.pods[pod.Namespace+"/"+pod.Name]
	if ps == nil || ps.succeeded {
		return
	}
	now := time.Now()
	r.lastChange = now
	r.evictions++
	// The state just before this eviction, not the last sample (up to a
	// second old): a pod lent idle room and reclaimed within that second
	// was taken from a queue above its share, which a sample taken before
	// the loan does not show. O(pods) per eviction; evictions are few.
	js := ps.job
	e := score.Eviction{
		T: r.traceSeconds(now), Queue: js.job.Queue, CPU: ps.cpu, Before: r.snapshot(now),
		Pod: ps.name, Job: js.job.ID, JobSize: js.job.Size, PreemptorJob: -1,
		Limit:      float64(scaledLimitSeconds(js.job.Limit, r.opts.compression)) * r.opts.compression,
		Disruption: disruptionOf(pod),
	}
	if !ps.boundAt.IsZero() {
		e.Ran = now.Sub(ps.boundAt).Seconds() * r.opts.compression
	}
	e.Done = js.completing
	r.evictionLog = append(r.evictionLog, e)
	unit := ps.name
	if js.job.Size > 1 {
		unit = js.job.Name()
	}
	r.victims = append(r.victims, victim{pod: ps.name, unit: unit, node: ps.node, bound: ps.boundAt, at: now})
	js.evicted++
	if js.completing {
		ps.succeeded = true // its room is free; complete() finishes the job
		return
	}
	delete(js.live, ps.name)
	if !ps.boundAt.IsZero() {
		js.bound--
		if !js.start.IsZero() {
			// The run is lost; the others hold their nodes until it restarts.
			js.start = time.Time{}
			js.epoch++
			r.running--
			js.partialSince = now
		} else if js.job.Size > 1 {
			r.partialNS += r.nodeSeconds(ps, now)
		}
	}
	js.recreated++
	name := fmt.Sprintf("%s-r%d", ps.name, js.recreated)
	pod = r.podFor(js, name)
	r.register(js, pod)
	go func() {
		if _, err := r.env.Client.CoreV1().Pods(js.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			r.fail(fmt.Errorf("recreating evicted pod %s/%s: %w", js.ns, name, err))
		}
	}()
}

// register makes pod one of js's live pods; the caller holds r.mu.
func (r *runner) register(js *jobState, pod *v1.Pod) {
	ps := &podState{job: js, name: pod.Name, cpu: js.job.MemberCPU}
	js.live[pod.Name] = ps
	r.pods[js.ns+"/"+pod.Name] = ps
}

// podFor builds a pod of js in the form the profile expects.
func (r *runner) podFor(js *jobState, name string) *v1.Pod {
	j := js.job
	cores := j.MemberCPU / 1000
	b := harness.Pod(js.ns, name).CPU(resource.NewMilliQuantity(j.MemberCPU, resource.DecimalSI).String()).
		Mem(resource.NewQuantity(cores*memPerCore, resource.BinarySI).String()).
		Scheduler(r.p.schedulerName).Labels(map[string]string{jobLabel: j.Name()})
	if j.Size > 1 && r.p.gang == gangCaldera {
		b.Group(j.Name())
	}
	pod := b.Obj()
	if j.Size > 1 && r.p.gang == gangUpstream {
		pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(j.Name())}
	}
	pod.Annotations = map[string]string{runTimeAnnotation: scaledRun(j.Run, r.opts.compression).String()}
	// Every profile gets the limit, so that the pods are the same for all;
	// only Caldera reads it.
	if lim := scaledLimitSeconds(j.Limit, r.opts.compression); lim > 0 {
		pod.Annotations[runlimit.Annotation] = strconv.FormatInt(lim, 10)
	}
	return pod
}

// scaledRun is a job's run time in wall time: divided by the compression,
// to the millisecond.
func scaledRun(run time.Duration, compression float64) time.Duration {
	return time.Duration(float64(run) / compression).Round(time.Millisecond)
}

// scaledLimitSeconds is a job's declared limit in wall time, as the
// annotation's whole seconds: divided by the compression like the run time,
// and rounded up, so that it never falls below the scaled run time (a
// trace's limit is at or above its run). 0: no limit.
func scaledLimitSeconds(limit time.Duration, compression float64) int64 {
	if limit <= 0 {
		return 0
	}
	return int64(math.Ceil(limit.Seconds() / compression))
}

// submit creates each job at its (compressed) arrival time.
func (r *runner) submit(ctx context.Context) {
	sem := make(chan struct{}, createWorkers)
	var wg sync.WaitGroup
	for _, js := range r.jobs {
		at := r.start.Add(time.Duration(float64(js.job.Arrival) / r.opts.compression))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		select {
		case <-ctx.Done():
			return
		case sem <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := r.createJob(ctx, js); err != nil && ctx.Err() == nil {
				r.fail(err)
			}
		}()
	}
	wg.Wait()
}

func (r *runner) createJob(ctx context.Context, js *jobState) error {
	j := js.job
	r.mu.Lock()
	pods := make([]*v1.Pod, j.Size)
	for m := range pods {
		pods[m] = r.podFor(js, fmt.Sprintf("%s-%d", j.Name(), m))
		r.register(js, pods[m])
	}
	r.mu.Unlock()
	if j.Size > 1 {
		var err error
		switch r.p.gang {
		case gangCaldera:
			_, err = r.env.PGClient.SchedulingV1alpha1().PodGroups(js.ns).Create(ctx, harness.PodGroup(js.ns, j.Name(), int32(j.Size)), metav1.CreateOptions{})
		case gangUpstream:
			_, err = r.env.Client.SchedulingV1beta1().PodGroups(js.ns).Create(ctx, &schedulingv1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: js.ns, Name: j.Name()},
				Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(j.Size)},
				}},
			}, metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("creating group %s/%s: %w", js.ns, j.Name(), err)
		}
	}
	for _, pod := range pods {
		if _, err := r.env.Client.CoreV1().Pods(js.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", js.ns, pod.Name, err)
		}
	}
	r.mu.Lock()
	r.submitted++
	r.mu.Unlock()
	return nil
}

// loop samples the cluster every sampleEvery until every job finished, the
// drain ended, the run stalled or failed; it returns why it stopped early.
func (r *runner) loop(ctx context.Context, t *testing.T) string {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	deadline := r.start.Add(time.Duration(float64(r.opts.drainEnd) / r.opts.compression))
	lastLog := r.start
	for {
		select {
		case <-ctx.Done():
			return ctx.Err().Error()
		case now := <-tick.C:
			r.mu.Lock()
			r.sample(now)
			finished, running, submitted, idle, err := r.finished, r.running, r.submitted, now.Sub(r.lastChange), r.err
			r.mu.Unlock()
			if now.Sub(lastLog) >= 30*time.Second {
				lastLog = now
				t.Logf("%s: trace %4.0fs: %d/%d jobs submitted, %d running, %d finished", r.p.name, r.traceSeconds(now), submitted, len(r.jobs), running, finished)
			}
			switch {
			case err != nil:
				return err.Error()
			case finished == len(r.jobs):
				return ""
			case now.After(deadline):
				return fmt.Sprintf("drain ended at %v trace time with %d of %d jobs unfinished", r.opts.drainEnd, len(r.jobs)-finished, len(r.jobs))
			case submitted == len(r.jobs) && running == 0 && idle >= r.opts.stall:
				return fmt.Sprintf("stalled: nothing bound, finished or evicted for %v (wall) with no job running and %d unfinished", r.opts.stall, len(r.jobs)-finished)
			}
		}
	}
}

// sample records the allocation of every queue; the caller holds r.mu.
func (r *runner) sample(now time.Time) {
	r.samples = append(r.samples, r.snapshot(now))
}

// snapshot is the cluster's state as the runner has seen it; r.mu held.
func (r *runner) snapshot(now time.Time) score.Sample {
	s := score.Sample{T: r.traceSeconds(now), Allocated: map[string]int64{}, Pending: map[string]int64{}}
	for _, js := range r.jobs {
		for _, ps := range js.live {
			switch {
			case ps.succeeded:
			case ps.boundAt.IsZero():
				s.Pending[js.ns] += ps.cpu
			default:
				s.Allocated[js.ns] += ps.cpu
				if js.start.IsZero() && js.job.Size > 1 {
					s.Partial += ps.cpu
				}
			}
		}
	}
	return s
}

// explainUnfinished logs, for up to maxExplained jobs that never finished,
// how many of their pods are bound and the scheduler's last word on one
// that is not (its PodScheduled condition), for the report's explanations.
func (r *runner) explainUnfinished(t *testing.T) {
	const maxExplained = 12
	r.mu.Lock()
	type item struct {
		js          *jobState
		pod         string
		bound, live int
	}
	var items []item
	for _, js := range r.jobs {
		if !js.end.IsZero() || len(items) == maxExplained {
			continue
		}
		it := item{js: js, bound: js.bound, live: len(js.live)}
		for _, ps := range js.live {
			if ps.boundAt.IsZero() {
				it.pod = ps.name
				break
			}
		}
		items = append(items, it)
	}
	r.mu.Unlock()
	for _, it := range items {
		msg := "all bound (running)"
		if it.pod != "" {
			msg = "no PodScheduled condition"
			pod, err := r.env.Client.CoreV1().Pods(it.js.ns).Get(context.Background(), it.pod, metav1.GetOptions{})
			if err != nil {
				msg = err.Error()
			} else {
				for _, c := range pod.Status.Conditions {
					if c.Type == v1.PodScheduled {
						msg = c.Reason + ": " + c.Message
					}
				}
			}
		}
		t.Logf("%s: unfinished %s/%s (%d pods x %dm cpu, arrived %v): %d/%d bound; %s", r.p.name, it.js.ns, it.js.job.Name(),
			it.js.job.Size, it.js.job.MemberCPU, it.js.job.Arrival, it.bound, it.live, msg)
	}
}

// probeTimeout bounds the wait for an external scheduler's first bind.
const probeTimeout = 2 * time.Minute

// probe creates a small pod for p's scheduler, waits until it is bound and
// deletes it: the scheduler is then up and sees the nodes.
func probe(ctx context.Context, env *harness.Env, p profile) error {
	const ns = "quality-probe"
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("probe namespace: %w", err)
	}
	pod := harness.Pod(ns, "probe").CPU("10m").Scheduler(p.schedulerName).Obj()
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("probe pod: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, probeTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := env.Client.CoreV1().Pods(ns).Get(ctx, "probe", metav1.GetOptions{})
		return err == nil && got.Spec.NodeName != "", nil
	})
	if err != nil {
		return fmt.Errorf("the external scheduler did not bind a probe pod within %v: %w", probeTimeout, err)
	}
	zero := int64(0)
	return env.Client.CoreV1().Pods(ns).Delete(ctx, "probe", metav1.DeleteOptions{GracePeriodSeconds: &zero})
}
