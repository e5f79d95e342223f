package cache

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qinformers "github.com/caldera-sched/caldera/pkg/apis/generated/informers/externalversions"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// AdmissionOptions configure queue admission: CalderaEnqueue's args.
type AdmissionOptions struct {
	// DefaultQueue takes groups that name no queue; created when missing.
	DefaultQueue string
	// AdmitSingletons: pods without a PodGroup are groups of one that need
	// admission too. When false they bypass queues.
	AdmitSingletons bool
	// OvercommitFactor multiplies the cluster's allocatable in the cluster check.
	OvercommitFactor float64
	// StarvationThreshold is how long a group may wait at the head of its queue
	// before it reserves the queue.
	StarvationThreshold time.Duration
	// Period is how often an admission pass runs without events.
	Period time.Duration
	// CheckResourceQuota: a group's minimum must also fit its namespace's
	// ResourceQuotas (admission check 6).
	CheckResourceQuota bool
}

// unit is one unit of admission: a gang (key "pg:ns/name") or a singleton pod
// (key "pod:ns/name").
type unit struct {
	key   string
	gang  *group  // nil for singletons
	pod   *v1.Pod // the singleton's pod
	queue string
	// asked is the queue the unit's labels name when no Queue has that
	// name (queue is then MissingQueue), else "".
	asked    string
	priority int32
	created  time.Time
	request  resources.List
	members  int32
	min      int32
	admitted bool
	// annotated: the PodGroup carries the admitted-at annotation.
	annotated bool
	// started: the admitted gang had minMember members bound; it reserves
	// nothing from then on.
	started bool
	// held is what the unit's bound, unfinished pods request; inflight is
	// what it adds to its queue's inflight: request - held while admitted
	// (nil when nothing).
	held     resources.List
	inflight resources.List
	// heldShared: held is the one bound pod's request list, which pods
	// share (interned), so it must be copied before it is changed. A bound
	// singleton then holds no list of its own.
	heldShared bool
	// onPlan: admitted on room only a reclaim or preemption plan frees
	// (queue.Decision.OnPlan).
	onPlan bool
	// freeRoomUntil: admission counts no eviction room for the unit before
	// then (queue.Group.FreeRoomUntil); set when its plan found no victims.
	freeRoomUntil time.Time
	// notice is the last admission Event written for the unit.
	notice string
	// waitObserved: the unit's first admission is in admission_wait_seconds.
	waitObserved bool
}

// podAcct remembers how one unfinished pod was counted, so that its update or
// deletion subtracts exactly that.
type podAcct struct {
	unit  string
	queue string
	req   resources.List
	bound bool
	// followsNS: the queue was resolved without a unit for a pod with no
	// queue label of its own, so it is the namespace's (or the default);
	// such accounts are indexed in nsPods and move when the label does.
	followsNS bool
	// prio is the pod's priority, for the per-priority allocated amounts.
	prio int32
	// asked is the queue the pod's labels name when no Queue has that name
	// (queue is then MissingQueue), else "".
	asked string
	// slot is the account's index in unitPods[unit].
	slot int32
	// node is the node a bound pod is on (its room in feasibleState).
	node string
}

// queueUsage is one queue's allocated and inflight amounts.
type queueUsage struct {
	allocated, inflight resources.List
}

// queueSort is what QueueSort reads about a queue.
type queueSort struct {
	priority int32
	share    float64
}

// admissionState is the cache's queue side; guarded by Cache.mu.
type admissionState struct {
	opts     AdmissionOptions
	profiles map[string]bool
	qclient  qclient.Interface
	queues   map[string]*qapi.Queue
	tree     *queue.Tree
	nsQueue  map[string]string
	pending  *queue.Pending
	units    map[string]*unit
	pods     map[types.UID]*podAcct
	// unitPods indexes pods by the unit they are accounted to, whether or
	// not the unit exists. Moving or re-creating a unit re-tags exactly
	// these: the member informer and the scheduler's pod informer deliver
	// a relabelled pod independently, so a gang's members and the pods
	// accounted to its unit can differ for a while. A slice (each account
	// knows its slot) rather than a set: most units are singletons, and a
	// one-entry map costs a few hundred bytes per pod.
	unitPods map[string][]*podAcct
	// nsPods indexes, per namespace, the accounts whose queue follows the
	// namespace's label (podAcct.followsNS): pods accounted without a unit,
	// e.g. the members of a PodGroup that does not exist. onNamespace moves
	// them; their units move the others.
	nsPods map[string]map[types.UID]*podAcct
	usage  map[string]*queueUsage
	// extras counts members beyond their gang's minimum that are reserved
	// but not bound (extras.go).
	extras extraBook
	// byPrio is, per queue and pod priority, what bound pods request: what
	// preemption within the queue could free for a higher priority.
	byPrio  map[string]map[int32]resources.List
	used    resources.List
	shares  *queue.Shares
	sorting map[string]queueSort
	kick    chan struct{}
	writes  chan admissionWrite
	quotas  corelisters.ResourceQuotaLister
	// feas is the cache's per-node room, which pod accounts feed.
	feas *feasibleState
	// scratch and scratchQ are podRequestLocked's working lists (guarded
	// by Cache.mu).
	scratch  resources.List
	scratchQ v1.ResourceList
}

// admissionWrite is an Event and, for gangs, the admitted-at annotation that
// the status leader writes for a decision.
type admissionWrite struct {
	unit     string
	pg       *GroupKey
	pod      *v1.Pod
	admitted bool
	// uid is the PodGroup's: a decision about one object is never written
	// on another created under its name since.
	uid types.UID
	// unadmit: remove the admitted-at annotation of a released gang.
	unadmit bool
	message string
}

func gangUnitKey(k GroupKey) string           { return "pg:" + k.Namespace + "/" + k.Name }
func podUnitKey(p *v1.Pod) string             { return "pod:" + p.Namespace + "/" + p.Name }
func (a *admissionState) on() bool            { return a != nil }
func (a *admissionState) ours(p *v1.Pod) bool { return a.profiles[p.Spec.SchedulerName] }

// EnableAdmission turns on queue admission for the profile named profile. The
// first call starts the Queue and Namespace informers, the default queue and
// the admission loop; later calls (other profiles) must pass the same options.
func (c *Cache) EnableAdmission(ctx context.Context, profile string, opts AdmissionOptions) error {
	c.mu.Lock()
	if a := c.adm; a != nil {
		defer c.mu.Unlock()
		if a.opts != opts {
			return fmt.Errorf("admission options %+v conflict with %+v set by another profile: give every profile the same CalderaEnqueue args", opts, a.opts)
		}
		a.profiles[profile] = true
		return nil
	}
	cfg := rest.CopyConfig(c.handle.KubeConfig())
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	client, err := qclient.NewForConfig(cfg)
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("building Queue client: %w", err)
	}
	c.installAdmissionLocked(newAdmissionState(profile, opts, client))
	c.mu.Unlock()

	logger := klog.FromContext(ctx)
	factory := qinformers.NewSharedInformerFactory(client, 0)
	qinf := factory.Scheduling().V1alpha1().Queues().Informer()
	qreg, err := qinf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onQueue(obj, false) },
		UpdateFunc: func(_, obj any) { c.onQueue(obj, false) },
		DeleteFunc: func(obj any) { c.onQueue(obj, true) },
	})
	if err != nil {
		return err
	}
	sif := c.handle.SharedInformerFactory()
	if _, err := sif.Core().V1().Namespaces().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onNamespace(obj, false) },
		UpdateFunc: func(_, obj any) { c.onNamespace(obj, false) },
		DeleteFunc: func(obj any) { c.onNamespace(obj, true) },
	}); err != nil {
		return err
	}
	// Every unfinished pod: what nodes hold (cluster and per queue), and
	// the singletons that need admission.
	if _, err := sif.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onAnyPod(obj, false) },
		UpdateFunc: func(old, obj any) { c.onAnyPodUpdate(old, obj) },
		DeleteFunc: func(obj any) { c.onAnyPod(obj, true) },
	}); err != nil {
		return err
	}
	if opts.CheckResourceQuota {
		rq := sif.Core().V1().ResourceQuotas()
		if _, err := rq.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.kickAdmission() },
			UpdateFunc: func(_, _ any) { c.kickAdmission() },
			DeleteFunc: func(any) { c.kickAdmission() },
		}); err != nil {
			return err
		}
		c.mu.Lock()
		c.adm.quotas = rq.Lister()
		c.mu.Unlock()
	}
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitFor(syncCtx, "", qreg.HasSyncedChecker()) {
		return fmt.Errorf("Queues did not sync within %v: is the Queue CRD (scheduling.caldera.dev/v1alpha1) installed and readable?", syncTimeout)
	}
	go c.ensureDefaultQueue(ctx, logger, opts.DefaultQueue)
	go c.admissionLoop(ctx, logger)
	return nil
}

// newAdmissionState returns an empty admission state for profile, without
// informers or goroutines.
func newAdmissionState(profile string, opts AdmissionOptions, client qclient.Interface) *admissionState {
	return &admissionState{
		opts:     opts,
		profiles: map[string]bool{profile: true},
		qclient:  client,
		queues:   map[string]*qapi.Queue{},
		tree:     queue.BuildTree(nil),
		nsQueue:  map[string]string{},
		pending:  queue.NewPending(),
		units:    map[string]*unit{},
		pods:     map[types.UID]*podAcct{},
		unitPods: map[string][]*podAcct{},
		nsPods:   map[string]map[types.UID]*podAcct{},
		usage:    map[string]*queueUsage{},
		byPrio:   map[string]map[int32]resources.List{},
		used:     resources.List{},
		sorting:  map[string]queueSort{},
		kick:     make(chan struct{}, 1),
		writes:   make(chan admissionWrite, 1024),
	}
}

// installAdmissionLocked sets the cache's admission state; the gangs the
// cache already knows become units now.
func (c *Cache) installAdmissionLocked(a *admissionState) {
	c.adm = a
	a.feas = &c.feasible
	for _, g := range c.groups {
		c.syncGangUnitLocked(g)
	}
}

func (c *Cache) ensureDefaultQueue(ctx context.Context, logger klog.Logger, name string) {
	q := &qapi.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       qapi.QueueSpec{Weight: 1, Reclaimable: ptr.To(true), State: qapi.QueueStateOpen},
	}
	for ctx.Err() == nil {
		_, err := c.adm.qclient.SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		logger.Error(err, "Cannot create the default queue; retrying", "queue", name)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// kickLocked asks for an admission pass soon.
func (a *admissionState) kickLocked() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (c *Cache) kickAdmission() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adm.kickLocked()
}

// quotaCheckLocked returns admission check 6 for one pass: a group's minimum
// must fit every ResourceQuota of its namespace, for the resources the quota
// limits and the group requests. The group's own pods already count in the
// quota's used amounts (quota admission charged them at creation), so they
// are taken out before the group's minimum is added; groups admitted earlier
// in the same pass count too.
func (c *Cache) quotaCheckLocked() queue.QuotaFunc {
	a := c.adm
	extra := map[string]resources.List{}
	return func(g queue.Group) (bool, string) {
		u := a.units[g.Key]
		if u == nil {
			return true, ""
		}
		ns, own := c.unitNamespaceLocked(u), c.unitChargedLocked(u)
		list, err := a.quotas.ResourceQuotas(ns).List(labels.Everything())
		if err != nil || len(list) == 0 {
			return true, ""
		}
		quotas := make([]queue.Quota, 0, len(list))
		for _, q := range list {
			hard := q.Status.Hard
			if hard == nil {
				hard = q.Spec.Hard
			}
			quotas = append(quotas, queue.Quota{Name: q.Name, Hard: quotaList(hard), Used: quotaList(q.Status.Used)})
		}
		if ok, msg := queue.FitsQuotas(ns, quotas, g.Request, own, extra[ns]); !ok {
			return false, msg
		}
		extra[ns] = extra[ns].Add(g.Request)
		return true, ""
	}
}

// quotaList converts a ResourceQuota's amounts to request resource names,
// dropping what does not limit requests (limits.*, counts).
func quotaList(rl v1.ResourceList) resources.List {
	out := resources.List{}
	for name, q := range rl {
		res, ok := quotaResource(name)
		if !ok {
			continue
		}
		if res == resources.CPU {
			out[res] = q.MilliValue()
		} else {
			out[res] = q.Value()
		}
	}
	return out
}

// quotaResource maps a ResourceQuota resource name to the request it limits.
func quotaResource(name v1.ResourceName) (string, bool) {
	n := string(name)
	switch {
	case strings.HasPrefix(n, "requests."):
		n = strings.TrimPrefix(n, "requests.")
	case n == "cpu" || n == "memory" || n == "ephemeral-storage":
	default:
		return "", false
	}
	if n == "cpu" {
		return resources.CPU, true
	}
	return n, true
}

func (c *Cache) unitNamespaceLocked(u *unit) string {
	if u.gang != nil {
		return u.gang.key.Namespace
	}
	return u.pod.Namespace
}

// unitChargedLocked sums the requests of the unit's unfinished pods.
func (c *Cache) unitChargedLocked(u *unit) resources.List {
	if u.gang == nil {
		return podRequest(u.pod)
	}
	out := resources.List{}
	for _, m := range u.gang.members {
		if !m.state.Phase.Terminal() {
			out.Add(m.request)
		}
	}
	return out
}

// debounce gathers the events of a burst (a Job creating its pods) into one pass.
const debounce = 20 * time.Millisecond

func (c *Cache) admissionLoop(ctx context.Context, logger klog.Logger) {
	// A pass before the scheduler's informers have listed nodes and pods
	// would see an empty cluster and refuse everything; wait for them (the
	// scheduler starts its factory once every plugin is built).
	sif := c.handle.SharedInformerFactory().Core().V1()
	if !cache.WaitFor(ctx, "", sif.Nodes().Informer().HasSyncedChecker(), sif.Pods().Informer().HasSyncedChecker(), sif.Namespaces().Informer().HasSyncedChecker(), c.membersSynced) {
		return
	}
	tick := time.NewTicker(c.adm.opts.Period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.adm.kick:
			select {
			case <-ctx.Done():
				return
			case <-time.After(debounce):
			}
		case <-tick.C:
		}
		c.AdmissionPass(logger, time.Now())
	}
}

// AdmissionPass runs Volcano's enqueue action once: it divides the cluster
// among the queues, admits what fits, activates the admitted groups' pods
// and hands decisions to the status writer.
func (c *Cache) AdmissionPass(logger klog.Logger, now time.Time) {
	c.mu.Lock()
	a := c.adm
	c.returnShortLocked(now)
	usage := make(map[string]queue.Usage, len(a.usage))
	for _, name := range a.pending.Queues() {
		usage[name] = queue.Usage{Pending: a.pending.PendingRequest(name)}
	}
	for name, u := range a.usage {
		us := usage[name]
		us.Allocated, us.Inflight = u.allocated, u.inflight
		usage[name] = us
	}
	a.shares = queue.Divide(a.tree, c.total, usage)
	opts := queue.Options{
		OvercommitFactor:    a.opts.OvercommitFactor,
		StarvationThreshold: a.opts.StarvationThreshold,
		Reclaim:             c.reclaim,
	}
	if c.preempt {
		opts.Preemptible = c.preemptibleLocked
	}
	if a.quotas != nil {
		opts.Quota = c.quotaCheckLocked()
	}
	pl := c.placementLocked()
	opts.Placement = pl
	res := a.pending.Admit(a.shares, queue.Cluster{Allocatable: c.total, Used: a.used}, opts, now)
	pl.finish()
	act := map[string]*v1.Pod{}
	for _, o := range res.Admitted {
		u := a.units[o.Group.Key]
		if u == nil {
			continue
		}
		u.admitted, u.onPlan = true, o.Decision.OnPlan
		observeAdmissionLocked(u, now)
		c.setInflightLocked(u)
		if u.gang != nil {
			c.dirty[u.gang.key] = struct{}{}
			if u.gang.enqueueable {
				for k, p := range u.gang.pendingPodsLocked() {
					act[k] = p
				}
			}
		} else if u.pod.Spec.NodeName == "" {
			act[u.pod.Namespace+"/"+u.pod.Name] = u.pod
		}
		// A singleton admitted without having waited gets no Event: its
		// Scheduled Event follows at once, and a backlog of plain pods would
		// otherwise post one Event per pod at the same moment, which stalls
		// binds behind new API connections (docs/performance.md). One that
		// was told NotAdmitted is told it may go.
		if u.gang != nil || u.notice != "" {
			c.noteLocked(u, true, "admitted to queue "+u.queue)
		}
	}
	for name := range a.sorting {
		s := a.sorting[name]
		s.share = a.shares.Share(name)
		a.sorting[name] = s
	}
	c.recordQueueMetricsLocked()
	// res belongs to the Pending: read it under the lock.
	nAdmitted, nRefused := len(res.Admitted), len(res.Refused)
	c.mu.Unlock()
	if nAdmitted > 0 {
		logger.V(3).Info("Admission pass", "admitted", nAdmitted, "refused", nRefused)
	}
	c.activate(logger, act)
}

// noteLocked queues the Event (and annotation) for a decision, once per change.
func (c *Cache) noteLocked(u *unit, admitted bool, msg string) {
	id := fmt.Sprint(admitted, msg)
	if u.notice == id {
		return
	}
	u.notice = id
	w := admissionWrite{unit: u.key, admitted: admitted, message: msg, pod: u.pod}
	if u.gang != nil {
		k := u.gang.key
		w.pg, w.uid = &k, u.gang.pg.UID
	}
	select {
	case c.adm.writes <- w:
	default: // the writer is behind; the next change writes again
		u.notice = ""
	}
}

// noticePendingLocked queues a NotAdmitted Event for every pending group whose
// admission verdict changed. It runs on the status leader's period, not in the
// pass: a queue that stops (missing, closed) leaves verdicts on groups the
// pass never examined. O(pending groups); the Event is written once per change.
func (c *Cache) noticePendingLocked() {
	a := c.adm
	for key, u := range a.units {
		if u.admitted {
			continue
		}
		d, ok := a.pending.Decision(key)
		if !ok || d.Check == queue.CheckNone || d.Check == queue.CheckMembers {
			continue
		}
		c.noteLocked(u, false, decisionMessage(u, d))
	}
}

// Admitted answers CalderaEnqueue's PreEnqueue: whether pod's group is
// admitted, else why not.
func (c *Cache) Admitted(pod *v1.Pod) (bool, string) {
	c.markQueueSeen()
	c.mu.RLock()
	defer c.mu.RUnlock()
	a := c.adm
	key, labelled := GroupKeyOf(pod)
	var uk string
	if labelled {
		if g := c.groups[key]; g == nil || g.pg == nil {
			// CalderaGang says what the pod waits for.
			return true, ""
		}
		uk = gangUnitKey(key)
	} else {
		if !a.opts.AdmitSingletons {
			return true, ""
		}
		uk = podUnitKey(pod)
	}
	u := a.units[uk]
	if u == nil {
		return false, "waiting for admission"
	}
	if u.admitted {
		return true, ""
	}
	if d, ok := a.pending.Decision(uk); ok {
		return false, decisionMessage(u, d)
	}
	return false, "waiting for admission"
}

// resolveQueueLocked names the queue of a group, folded (foldQueueLocked):
// the PodGroup's label, else the pod's, else the namespace's, else the
// default queue. asked is the name asked for when it was folded, else "".
func (c *Cache) resolveQueueLocked(pg *metav1.ObjectMeta, pod *v1.Pod, ns string) (q, asked string) {
	return c.adm.foldQueueLocked(c.askedQueueLocked(pg, pod, ns))
}

// askedQueueLocked is the queue name a group's labels ask for.
func (c *Cache) askedQueueLocked(pg *metav1.ObjectMeta, pod *v1.Pod, ns string) string {
	if pg != nil {
		if q := pg.Labels[qapi.QueueLabel]; q != "" {
			return q
		}
	}
	if pod != nil {
		if q := pod.Labels[qapi.QueueLabel]; q != "" {
			return q
		}
	}
	if q := c.adm.nsQueue[ns]; q != "" {
		return q
	}
	return c.adm.opts.DefaultQueue
}

// syncGangUnitLocked brings a gang's admission unit up to date after any
// change to the group; O(log n) in the number of pending groups.
func (c *Cache) syncGangUnitLocked(g *group) {
	a := c.adm
	if !a.on() {
		return
	}
	uk := gangUnitKey(g.key)
	u := a.units[uk]
	if g.pg == nil {
		if u != nil {
			c.dropUnitLocked(u)
		}
		return
	}
	fresh := u == nil
	if fresh {
		u = &unit{key: uk, gang: g}
		a.units[uk] = u
		// Bound pods accounted before the unit existed (its PodGroup was
		// recreated, or came after them) are held by it from now on; the
		// move below adds them to its queue.
		for _, p := range a.unitPods[uk] {
			if p.bound {
				if old := a.usage[p.queue]; old != nil && p.queue != "" {
					old.allocated.Sub(p.req)
				}
				u.hold(p.req)
			}
		}
	}
	var first *v1.Pod
	for _, m := range g.members {
		first = m.pod
		break
	}
	q, asked := c.resolveQueueLocked(&g.pg.ObjectMeta, first, g.key.Namespace)
	u.asked = asked
	c.moveUnitLocked(u, q)
	u.priority, u.created = g.priority, g.created
	u.members, u.min = int32(g.counts.Reachable()), g.spec.MinMember
	annotated := admittedAnnotation(g.pg)
	if fresh && annotated {
		// Admitted by an earlier leader or process: never re-admit past capacity.
		u.admitted = true
		a.pending.Delete(uk)
	}
	u.annotated = annotated
	// The request follows the members and minMember until the gang starts
	// (cached in the group, so this is O(1) unless they changed): a gang
	// admitted by an earlier process is installed from its annotation
	// before the scheduler's pod informer has delivered its members, and a
	// request frozen then would reserve nothing.
	u.request = c.minRequestLocked(g)
	c.unadmitShortLocked(g, u)
	if !u.admitted {
		c.setPendingLocked(u)
		a.kickLocked()
	}
	c.setInflightLocked(u)
}

// admittedAnnotation reports whether pg carries an admission of its own: the
// admitted-at annotation, written no earlier than the object was created
// (second precision, as both are). A PodGroup recreated from another's YAML
// (kubectl get -o yaml, then apply) carries the old object's annotation and
// is not admitted by it.
func admittedAnnotation(pg *v1alpha1.PodGroup) bool {
	v, ok := pg.Annotations[qapi.AdmittedAtAnnotation]
	if !ok {
		return false
	}
	at, err := time.Parse(time.RFC3339, v)
	return err != nil || !at.Before(pg.CreationTimestamp.Time.Truncate(time.Second))
}

// unadmitLocked returns a released gang to its queue's pending groups: an
// admitted gang that could not be placed must not keep its queue's room
// reserved while others wait, or two admitted gangs could block each other.
func (c *Cache) unadmitLocked(g *group) {
	a := c.adm
	if !a.on() {
		return
	}
	u := a.units[gangUnitKey(g.key)]
	// A gang that started (had minMember bound) keeps its admission when it
	// is released, as a running Volcano job stays Inqueue: its replacement
	// members are scheduled next to the running ones. Sent back to pending,
	// its request would count its running members' resources a second
	// time, on top of the cluster's used amount, and could never fit again.
	if u == nil || !u.admitted || u.started {
		return
	}
	u.admitted, u.started = false, false
	u.notice = "" // the next admission writes its Event and annotation again
	c.setInflightLocked(u)
	u.request = c.minRequestLocked(g)
	c.setPendingLocked(u)
	k := g.key
	select {
	case a.writes <- admissionWrite{unit: u.key, pg: &k, uid: g.pg.UID, unadmit: true}:
	default:
	}
	a.kickLocked()
}

// dropUnitLocked forgets a unit: its group or pod is gone.
func (c *Cache) dropUnitLocked(u *unit) {
	a := c.adm
	a.pending.Delete(u.key)
	if q := a.usage[u.queue]; q != nil {
		q.inflight.Sub(u.inflight)
	}
	delete(a.units, u.key)
	c.feasible.track(u, true)
	if len(a.unitPods[u.key]) == 0 {
		delete(a.unitPods, u.key)
	}
	a.kickLocked()
}

// moveUnitLocked sets the unit's queue, moving what it holds and reserves.
func (c *Cache) moveUnitLocked(u *unit, q string) {
	if u.queue == q {
		return
	}
	a := c.adm
	if old := a.usage[u.queue]; old != nil && u.queue != "" {
		old.allocated.Sub(u.held)
		old.inflight.Sub(u.inflight)
	}
	u.queue = q
	nu := a.usageLocked(q)
	nu.allocated.Add(u.held)
	nu.inflight.Add(u.inflight)
	// Re-tag the pods accounted to the unit, so that their later events
	// subtract from the right queue: O(unit size), never a scan of all pods.
	for _, p := range a.unitPods[u.key] {
		a.retagLocked(p, q)
	}
}

// indexPodLocked records that p is accounted to p.unit. O(1).
func (a *admissionState) indexPodLocked(p *podAcct) {
	if p.unit == "" {
		return
	}
	l := a.unitPods[p.unit]
	p.slot = int32(len(l))
	a.unitPods[p.unit] = append(l, p)
}

// unindexPodLocked forgets that p is accounted to p.unit, moving the last
// account of the unit into its slot. O(1). The list of a unit that exists
// is kept even when empty, so that a pod's next event does not allocate it
// again.
func (a *admissionState) unindexPodLocked(p *podAcct) {
	l := a.unitPods[p.unit]
	if p.unit == "" || int(p.slot) >= len(l) || l[p.slot] != p {
		return
	}
	last := l[len(l)-1]
	l[p.slot], last.slot = last, p.slot
	l[len(l)-1] = nil
	l = l[:len(l)-1]
	if len(l) == 0 && a.units[p.unit] == nil {
		delete(a.unitPods, p.unit)
		return
	}
	a.unitPods[p.unit] = l
}

// indexNSLocked records that pod uid's account follows namespace ns.
func (a *admissionState) indexNSLocked(ns string, uid types.UID, p *podAcct) {
	m := a.nsPods[ns]
	if m == nil {
		m = map[types.UID]*podAcct{}
		a.nsPods[ns] = m
	}
	m[uid] = p
}

// unindexNSLocked forgets that pod uid's account follows namespace ns.
func (a *admissionState) unindexNSLocked(ns string, uid types.UID) {
	m := a.nsPods[ns]
	delete(m, uid)
	if len(m) == 0 {
		delete(a.nsPods, ns)
	}
}

// moveAcctLocked moves one pod's account, with what it holds, to queue q.
// Accounts of a unit move with it (moveUnitLocked); this is for the others.
func (a *admissionState) moveAcctLocked(p *podAcct, q string) {
	if p.queue == q {
		return
	}
	if p.bound {
		if old := a.usage[p.queue]; old != nil && p.queue != "" {
			old.allocated.Sub(p.req)
		}
		if q != "" {
			a.usageLocked(q).allocated.Add(p.req)
		}
	}
	a.retagLocked(p, q)
}

// retagLocked moves one pod's accounting to queue q.
func (a *admissionState) retagLocked(p *podAcct, q string) {
	if p.bound {
		a.prioLocked(p.queue, p.prio, p.req, -1)
		a.prioLocked(q, p.prio, p.req, 1)
		a.feas.requeue(p.node, p.queue, q, p.req)
	}
	p.queue = q
}

// prioLocked adds (sign 1) or subtracts (-1) req at queue and priority.
func (a *admissionState) prioLocked(queue string, prio int32, req resources.List, sign int) {
	if queue == "" {
		return
	}
	m := a.byPrio[queue]
	if m == nil {
		m = map[int32]resources.List{}
		a.byPrio[queue] = m
	}
	if sign > 0 {
		m[prio] = m[prio].Add(req)
		return
	}
	l := m[prio].Sub(req)
	if l.IsZero() {
		delete(m, prio)
	} else {
		m[prio] = l
	}
}

// preemptibleLocked is what bound pods of queue with a priority below prio
// request: admission's room for preemption within the queue.
func (c *Cache) preemptibleLocked(queue string, prio int32) resources.List {
	out := resources.List{}
	for p, l := range c.adm.byPrio[queue] {
		if p < prio {
			out.Add(l)
		}
	}
	return out
}

func (a *admissionState) usageLocked(q string) *queueUsage {
	u := a.usage[q]
	if u == nil {
		u = &queueUsage{allocated: resources.List{}, inflight: resources.List{}}
		a.usage[q] = u
		if _, ok := a.sorting[q]; !ok {
			a.sorting[q] = queueSort{}
		}
	}
	return u
}

// setInflightLocked recomputes what an admitted unit still reserves.
func (c *Cache) setInflightLocked(u *unit) {
	// Once a gang has had minMember members bound it has started, as Volcano
	// counts a running job: it reserves nothing more, so members finishing
	// one by one do not bring its reservation back.
	if u.gang != nil && u.admitted && u.gang.counts.Bound >= int(u.min) && u.min > 0 {
		u.started = true
	}
	q := c.adm.usageLocked(u.queue)
	q.inflight.Sub(u.inflight)
	// Rewritten in place: this runs on every bind and unbind of a unit's
	// pods, and u.inflight is only read under the lock (Dump clones it).
	clear(u.inflight)
	if u.admitted && !u.started && (u.gang == nil || u.gang.counts.Active > 0) {
		for k, v := range u.request {
			if d := v - u.held[k]; d > 0 {
				if u.inflight == nil {
					u.inflight = resources.List{}
				}
				u.inflight[k] = d
			}
		}
	}
	q.inflight.Add(u.inflight)
	c.feasible.track(u, false)
	// A pending unit's request is net of what its bound members hold, which
	// this call follows: refresh the pending entry when that changed.
	if !u.admitted {
		if g, ok := c.adm.pending.Get(u.key); ok && !g.Request.Equal(pendingRequest(u)) {
			c.setPendingLocked(u)
		}
	}
}

// setPendingLocked (re)places u among its queue's groups waiting for
// admission.
func (c *Cache) setPendingLocked(u *unit) {
	c.adm.pending.Set(queue.Group{Key: u.key, Queue: u.queue, Priority: u.priority, Created: u.created,
		Request: pendingRequest(u), Members: u.members, MinMember: u.min, FreeRoomUntil: u.freeRoomUntil})
}

// hold adds a bound pod's request to what u holds. The first one is
// shared, not copied (see heldShared).
func (u *unit) hold(req resources.List) {
	switch {
	case len(u.held) == 0:
		u.held, u.heldShared = req, true
	case u.heldShared:
		u.held, u.heldShared = u.held.Clone(), false
		fallthrough
	default:
		u.held = u.held.Add(req)
	}
}

// release subtracts a pod's request from what u holds.
func (u *unit) release(req resources.List) {
	if u.heldShared {
		if u.held.Equal(req) {
			u.held, u.heldShared = nil, false
			return
		}
		u.held, u.heldShared = u.held.Clone(), false
	}
	u.held = u.held.Sub(req)
}

// pendingRequest is what admission must still find room for: u's request
// less what its bound members already hold. Those are counted as used (and
// in their queue's allocated) already, so a gang that had members bound
// before it was admitted here (a scheduler killed while it bound the gang,
// before the admission was recorded on the PodGroup) would otherwise need
// their room twice and never be admitted.
func pendingRequest(u *unit) resources.List {
	if len(u.held) == 0 {
		return u.request
	}
	out := make(resources.List, len(u.request))
	for k, v := range u.request {
		if d := v - u.held[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// onAnyPod accounts every unfinished pod from the scheduler's pod informer
// (finished pods arrive as deletes): what nodes hold, per queue and in all,
// and the singletons waiting for admission. O(1) per event, plus the units
// refused for a capability deficit when a bound pod leaves.
func (c *Cache) onAnyPod(obj any, deleted bool) {
	c.activate(klog.Background(), c.accountPod(obj, deleted))
}

// accountPod is onAnyPod's accounting; it returns the pods to activate.
func (c *Cache) accountPod(obj any, deleted bool) (act map[string]*v1.Pod) {
	pod := asPod(obj)
	if pod == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.adm
	if pod.Spec.NodeName != "" || deleted || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		// Bound (added to allocated below, under the same lock) or gone.
		a.extras.drop(pod.UID)
	}
	old := a.pods[pod.UID]
	if old != nil {
		if old.bound {
			a.used.Sub(old.req)
			a.feas.bind(old.node, old.queue, old.req, -1)
			if q := a.usage[old.queue]; q != nil {
				q.allocated.Sub(old.req)
			}
			a.prioLocked(old.queue, old.prio, old.req, -1)
			if u := a.units[old.unit]; u != nil {
				u.release(old.req)
				c.setInflightLocked(u)
			}
			a.kickLocked() // room was freed
			act = c.takeDeficitRefusedLocked()
			c.clearFreeRoomOnlyLocked()
		}
		a.unindexPodLocked(old)
		if old.followsNS {
			a.unindexNSLocked(pod.Namespace, pod.UID)
		}
		delete(a.pods, pod.UID)
	}
	gk, labelled := GroupKeyOf(pod)
	singleton := false
	if !labelled && a.opts.AdmitSingletons && a.ours(pod) {
		singleton = true
	} else if a.opts.AdmitSingletons && (old == nil || isPodUnitKey(old.unit)) {
		// A singleton that joined a PodGroup through its label: its gang
		// is admitted instead. (Its unit exists only while its account
		// names it, so members already accounted as such skip the lookup.)
		if u := a.units[podUnitKeyOf(pod, old)]; u != nil && u.gang == nil && u.pod.UID == pod.UID {
			c.dropUnitLocked(u)
		}
	}
	if deleted || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		c.evictionLeftLocked(pod.UID, time.Now())
		if singleton {
			if u := a.units[podUnitKeyOf(pod, old)]; u != nil {
				c.dropUnitLocked(u)
			}
		}
		return act
	}
	// The pod's previous account is rewritten in place: a bind or unbind is
	// then free of allocations (no new account, key or request list).
	acct := old
	if acct == nil {
		acct = &podAcct{}
	}
	prevUnit := acct.unit
	*acct = podAcct{req: c.podRequestLocked(pod, old), bound: pod.Spec.NodeName != "", prio: podPriority(pod), node: pod.Spec.NodeName}
	if labelled && a.ours(pod) {
		if isGangUnitKey(prevUnit, gk) {
			acct.unit = prevUnit
		} else {
			acct.unit = gangUnitKey(gk)
		}
	} else if singleton {
		if isPodUnitKey(prevUnit) {
			acct.unit = prevUnit // namespace and name never change for a UID
		} else {
			acct.unit = podUnitKey(pod)
		}
		u := a.units[acct.unit]
		if u == nil {
			u = &unit{key: acct.unit, pod: pod, members: 1, min: 1}
			a.units[acct.unit] = u
		}
		u.pod = pod
		q, asked := c.resolveQueueLocked(nil, pod, pod.Namespace)
		u.asked = asked
		c.moveUnitLocked(u, q)
		u.priority, u.created = podPriority(pod), pod.CreationTimestamp.Time
		if !u.request.Equal(acct.req) {
			// Resized: an admitted singleton reserves what it asks now.
			u.request = acct.req
			c.setInflightLocked(u)
		}
		if acct.bound && !u.admitted {
			// Bound without us (a restart): it holds what it holds.
			u.admitted = true
			a.pending.Delete(u.key)
		}
		if !u.admitted {
			c.setPendingLocked(u)
			a.kickLocked()
		}
	}
	if u := a.units[acct.unit]; u != nil {
		acct.queue = u.queue
	} else if acct.unit != "" || a.ours(pod) {
		acct.queue, acct.asked = c.resolveQueueLocked(nil, pod, pod.Namespace)
		acct.followsNS = pod.Labels[qapi.QueueLabel] == ""
	}
	a.pods[pod.UID] = acct
	a.indexPodLocked(acct)
	if acct.followsNS {
		a.indexNSLocked(pod.Namespace, pod.UID, acct)
	}
	if acct.bound {
		a.used.Add(acct.req)
		a.feas.bind(acct.node, acct.queue, acct.req, 1)
		if acct.queue != "" {
			a.usageLocked(acct.queue).allocated.Add(acct.req)
			a.prioLocked(acct.queue, acct.prio, acct.req, 1)
		}
		if u := a.units[acct.unit]; u != nil {
			u.hold(acct.req)
			c.setInflightLocked(u)
		}
	}
	return act
}

// podRequestLocked is podRequest(pod), reusing the previous account's list
// when the request did not change (a bind, a status update): the common
// shape (containers only, no init containers, overhead or pod-level
// resources) is summed into a scratch list and compared, without the
// allocations of resourcehelper.PodRequests.
func (c *Cache) podRequestLocked(pod *v1.Pod, old *podAcct) resources.List {
	spec := &pod.Spec
	if len(spec.InitContainers) > 0 || spec.Overhead != nil || spec.Resources != nil {
		return c.requests.intern(podRequest(pod))
	}
	a := c.adm
	if a.scratch == nil {
		a.scratch, a.scratchQ = resources.List{}, v1.ResourceList{}
	}
	// Summed as Quantities and converted once, as ListFrom(PodRequests)
	// does, so rounding of fractional amounts is the same.
	clear(a.scratchQ)
	for i := range spec.Containers {
		for name, q := range spec.Containers[i].Resources.Requests {
			sum := a.scratchQ[name]
			sum.Add(q)
			a.scratchQ[name] = sum
		}
	}
	clear(a.scratch)
	for name, q := range a.scratchQ {
		if name == v1.ResourceCPU {
			a.scratch[resources.CPU] = q.MilliValue()
		} else {
			a.scratch[string(name)] = q.Value()
		}
	}
	if old != nil && old.req.Equal(a.scratch) {
		return old.req
	}
	return c.requests.intern(a.scratch)
}

// isPodUnitKey reports whether a unit key is a singleton's (podUnitKey).
func isPodUnitKey(key string) bool { return strings.HasPrefix(key, "pod:") }

// podUnitKeyOf is podUnitKey(pod), taken from the pod's previous account
// when that already names its singleton unit.
func podUnitKeyOf(pod *v1.Pod, old *podAcct) string {
	if old != nil && isPodUnitKey(old.unit) {
		return old.unit
	}
	return podUnitKey(pod)
}

// isGangUnitKey reports whether key == gangUnitKey(k), without building it.
func isGangUnitKey(key string, k GroupKey) bool {
	rest, ok := strings.CutPrefix(key, "pg:")
	if !ok || len(rest) != len(k.Namespace)+1+len(k.Name) {
		return false
	}
	return rest[:len(k.Namespace)] == k.Namespace && rest[len(k.Namespace)] == '/' && rest[len(k.Namespace)+1:] == k.Name
}

func (c *Cache) onQueue(obj any, deleted bool) {
	q, _ := objectOf[*qapi.Queue](obj)
	if q == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.adm
	_, existed := a.queues[q.Name]
	if deleted {
		delete(a.queues, q.Name)
		c.forgetQueueMetricsLocked(q.Name)
	} else {
		a.queues[q.Name] = q
	}
	if existed == deleted {
		// A name came or went (not a status write): what asked for it, or
		// was charged to it, moves.
		defer c.refoldLocked(q.Name)
	}
	specs := make([]queue.Spec, 0, len(a.queues))
	for _, q := range a.queues {
		specs = append(specs, SpecOfQueue(q))
	}
	a.tree = queue.BuildTree(specs)
	for name := range a.queues {
		s := a.sorting[name]
		s.priority = a.queues[name].Spec.Priority
		a.sorting[name] = s
	}
	a.kickLocked()
}

// SpecOfQueue converts a Queue to the policy's view.
func SpecOfQueue(q *qapi.Queue) queue.Spec {
	s := queue.Spec{
		Name:        q.Name,
		Parent:      q.Spec.Parent,
		Weight:      q.Spec.Weight,
		Reclaimable: q.Spec.Reclaimable == nil || *q.Spec.Reclaimable,
		Priority:    q.Spec.Priority,
		State:       queue.State(q.Spec.State),
	}
	if q.Spec.Capability != nil {
		s.Capability = ListFrom(q.Spec.Capability)
	}
	if q.Spec.Guarantee != nil {
		s.Guarantee = ListFrom(q.Spec.Guarantee)
	}
	return s
}

func (c *Cache) onNamespace(obj any, deleted bool) {
	ns, _ := objectOf[*v1.Namespace](obj)
	if ns == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.adm
	q := ns.Labels[qapi.QueueLabel]
	if deleted {
		q = ""
	}
	if a.nsQueue[ns.Name] == q {
		return
	}
	if q == "" {
		delete(a.nsQueue, ns.Name)
	} else {
		a.nsQueue[ns.Name] = q
	}
	// Rare: re-resolve the namespace's units, and the accounts without one
	// (their pods have no queue label, or they would not follow it).
	nsQ, nsAsked := c.resolveQueueLocked(nil, nil, ns.Name)
	for _, p := range a.nsPods[ns.Name] {
		if p.unit != "" && a.units[p.unit] != nil {
			continue // created since: the unit decides, and moves it below
		}
		a.moveAcctLocked(p, nsQ)
		p.asked = nsAsked
	}
	for _, u := range a.units {
		switch {
		case u.gang != nil && u.gang.key.Namespace == ns.Name:
			c.syncGangUnitLocked(u.gang)
		case u.pod != nil && u.pod.Namespace == ns.Name:
			q, asked := c.resolveQueueLocked(nil, u.pod, ns.Name)
			u.asked = asked
			c.moveUnitLocked(u, q)
			if !u.admitted {
				c.setPendingLocked(u)
			}
		}
	}
	a.kickLocked()
}

// QueueSortInfo returns the queue priority and share QueueSort compares for
// pod, without allocating.
func (c *Cache) queueSortLocked(queueName string) queueSort {
	if c.adm == nil {
		return queueSort{}
	}
	return c.adm.sorting[queueName]
}

// unitQueueLocked names the queue of pod's unit, "" when unknown.
func (c *Cache) unitQueueLocked(pod *v1.Pod) string {
	if c.adm == nil {
		return ""
	}
	if acct := c.adm.pods[pod.UID]; acct != nil {
		return acct.queue
	}
	return ""
}

// writeAdmissions is the status leader's side of admission: Events, and the
// admitted-at annotation that lets a restarted scheduler know a gang was
// admitted without admitting it again past capacity.
func (c *Cache) writeAdmissions(ctx context.Context) {
	if c.adm == nil {
		return
	}
	c.mu.Lock()
	c.noticePendingLocked()
	c.mu.Unlock()
	for {
		select {
		case w := <-c.adm.writes:
			c.writeAdmission(ctx, w)
		default:
			return
		}
	}
}

func (c *Cache) writeAdmission(ctx context.Context, w admissionWrite) {
	logger := klog.FromContext(ctx)
	if w.pg != nil {
		if pg, err := c.pgLister.PodGroups(w.pg.Namespace).Get(w.pg.Name); err != nil || pg.UID != w.uid {
			return // gone, or another object by now
		}
	}
	if w.unadmit {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, qapi.AdmittedAtAnnotation)
		if _, err := c.pgClient.SchedulingV1alpha1().PodGroups(w.pg.Namespace).Patch(ctx, w.pg.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Cannot clear admission on PodGroup", "podGroup", w.pg.String())
		}
		return
	}
	rec := c.handle.EventRecorder()
	reason, typ := "NotAdmitted", v1.EventTypeWarning
	if w.admitted {
		reason, typ = "Admitted", v1.EventTypeNormal
	}
	if w.pg == nil {
		if w.pod != nil {
			rec.Eventf(w.pod, nil, typ, reason, "Admission", "%s", w.message)
		}
		return
	}
	pg, err := c.pgLister.PodGroups(w.pg.Namespace).Get(w.pg.Name)
	if err != nil {
		return
	}
	rec.Eventf(PodGroupRef(pg), nil, typ, reason, "Admission", "%s", w.message)
	if !w.admitted || pg.Annotations[qapi.AdmittedAtAnnotation] != "" {
		return
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, qapi.AdmittedAtAnnotation, time.Now().UTC().Format(time.RFC3339))
	if _, err := c.pgClient.SchedulingV1alpha1().PodGroups(pg.Namespace).Patch(ctx, pg.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Cannot record admission on PodGroup", "podGroup", w.pg.String())
	}
}

// syncQueueStatus writes each Queue's status when it changed.
func (c *Cache) syncQueueStatus(ctx context.Context) {
	if c.adm == nil {
		return
	}
	type counts struct{ pending, admitted, running, completed int32 }
	c.mu.RLock()
	a := c.adm
	per := map[string]*counts{}
	for _, u := range a.units {
		n := per[u.queue]
		if n == nil {
			n = &counts{}
			per[u.queue] = n
		}
		switch {
		case !u.admitted:
			n.pending++
		case u.gang != nil && u.gang.counts.Succeeded >= int(u.min) && u.gang.counts.Running == 0:
			n.completed++
		case u.gang != nil && u.gang.counts.Running > 0:
			n.running++
		case u.gang == nil && u.pod.Status.Phase == v1.PodRunning:
			n.running++
		default:
			n.admitted++
		}
	}
	// A queue's allocated counts its descendants' (see QueueStatus.Allocated).
	alloc := make(map[string]resources.List, len(a.usage))
	for name, u := range a.usage {
		alloc[name] = alloc[name].Add(u.allocated)
		for _, anc := range a.tree.Ancestors(name) {
			alloc[anc] = alloc[anc].Add(u.allocated)
		}
	}
	var want []*qapi.Queue
	names := make([]string, 0, len(a.queues))
	for name := range a.queues {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		q := a.queues[name]
		st := q.Status.DeepCopy()
		n := per[name]
		if n == nil {
			n = &counts{}
		}
		st.Pending, st.Admitted, st.Running, st.Completed = n.pending, n.admitted, n.running, n.completed
		st.Allocated = toResourceList(alloc[name])
		share := 0.0
		if a.shares != nil {
			st.Deserved = toResourceList(a.shares.Deserved(name))
			share = a.shares.Share(name)
			st.Share = queue.FormatShare(share)
		}
		setCondition(&st.Conditions, q.Generation, qapi.QueueConditionInvalidParent, a.tree.Problem(name))
		over := metav1.Condition{Type: qapi.QueueConditionOverDeserved, Status: metav1.ConditionFalse, Reason: qapi.ReasonWithinDeserved, Message: "allocated is within the deserved share"}
		if share > 1 {
			over.Status, over.Reason, over.Message = metav1.ConditionTrue, qapi.ReasonAboveDeserved, "allocated exceeds the deserved share "+st.Share
		}
		putCondition(&st.Conditions, q.Generation, over)
		if !statusEqual(&q.Status, st) {
			cp := q.DeepCopy()
			cp.Status = *st
			want = append(want, cp)
		}
	}
	c.mu.RUnlock()
	for _, q := range want {
		if _, err := a.qclient.SchedulingV1alpha1().Queues().UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			klog.FromContext(ctx).Error(err, "Cannot write Queue status", "queue", q.Name)
		}
	}
}

func setCondition(conds *[]metav1.Condition, gen int64, typ string, p *queue.Problem) {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: qapi.ReasonParentValid, Message: "the queue's parent chain reaches the root"}
	if p != nil {
		c.Status, c.Message = metav1.ConditionTrue, p.Message
		c.Reason = qapi.ReasonParentNotFound
		if p.Kind == queue.ProblemCycle {
			c.Reason = qapi.ReasonParentCycle
		}
	}
	putCondition(conds, gen, c)
}

func putCondition(conds *[]metav1.Condition, gen int64, c metav1.Condition) {
	c.ObservedGeneration = gen
	for i := range *conds {
		old := &(*conds)[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == gen {
			return
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = metav1.Now()
		}
		*old = c
		return
	}
	c.LastTransitionTime = metav1.Now()
	*conds = append(*conds, c)
}

func statusEqual(a, b *qapi.QueueStatus) bool {
	if a.Share != b.Share || a.Pending != b.Pending || a.Admitted != b.Admitted || a.Running != b.Running || a.Completed != b.Completed {
		return false
	}
	if !ListFrom(a.Allocated).Equal(ListFrom(b.Allocated)) || !ListFrom(a.Deserved).Equal(ListFrom(b.Deserved)) {
		return false
	}
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

// toResourceList converts back to API quantities for status.
func toResourceList(l resources.List) v1.ResourceList {
	if len(l) == 0 {
		return nil
	}
	out := v1.ResourceList{}
	for k, v := range l {
		if v == 0 {
			continue
		}
		if k == resources.CPU {
			out[v1.ResourceCPU] = *resourceMilli(v)
		} else {
			out[v1.ResourceName(k)] = *resourceInt(v)
		}
	}
	return out
}

func resourceMilli(v int64) *resource.Quantity {
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}
func resourceInt(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.DecimalSI) }
