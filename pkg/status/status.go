// Package status writes what Caldera tells the API server about the groups
// and queues it schedules: PodGroup status and Events (Volcano's
// closeSession), admission Events and the admitted-at annotation, Queue
// status, the removal of stale nominations, and the default queue. Binding
// and evictions stay with the plugins that decide them.
//
// The writer reads the scheduler's state only through Source, whose work
// items are copied out under the state's lock, so no API call ever runs
// under it. It writes only while its process leads (Leadership), retries
// what failed at its next period, and counts failures in
// caldera_status_write_errors_total.
package status

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// Group is the status work of one group, copied out of the state.
type Group struct {
	Key types.NamespacedName
	// Source identifies the group's PodGroup, of whatever dialect; nil
	// when it does not exist.
	Source *groupspec.Source
	// Progress is what the PodGroup's status is made from (with Source
	// only); the writer turns it into the dialect's status.
	Progress groupspec.Progress
	// Notice is the Event to post; zero when the group's state did not
	// change since the last one.
	Notice gang.Notice
	// Pods receive the notice when the PodGroup does not exist.
	Pods []*v1.Pod
	// Profile is the scheduler name whose recorder reports Events about
	// the PodGroup (one of its members').
	Profile string
	// Verdict is what the verdict annotation of an admitted gang's
	// scheduler-plugins PodGroup is to say: nil leaves it as it is (the
	// admission writer owns it while the gang is not admitted), "" takes
	// it out (the gang has started), else why the admitted gang's members
	// cannot be placed. Events expire; the annotation stays with the job.
	Verdict *string
	// Waiting are the group's pods that wait for a node. With a
	// WaitingReason (ReasonWaitingForMembers, ReasonWaitingForPodGroup)
	// their PodScheduled condition is to say so, with WaitingMessage;
	// without one, a condition of the writer's is to be taken out.
	Waiting                       []*v1.Pod
	WaitingReason, WaitingMessage string
}

// Admission is one write that an admission decision asks for: an Event and,
// for a gang, the admitted-at annotation; or, with Unadmit, the removal of
// that annotation; or, with ClearNomination, the removal of Pod's
// nominated node.
type Admission struct {
	// PodGroup names the gang's PodGroup; nil for a singleton.
	PodGroup *types.NamespacedName
	// Dialect is the PodGroup's API (with PodGroup only).
	Dialect groupspec.Dialect
	// UID is the PodGroup's: a decision about one object is never written
	// on another created under its name since.
	UID types.UID
	// Pod is a singleton's pod, or the pod whose nomination is cleared.
	Pod *v1.Pod
	// Waiting are the unit's pods that wait for a node, as the state's
	// informer last delivered them: a refusal's verdict goes into their
	// PodScheduled condition, an admission takes it out.
	Waiting  []*v1.Pod
	Admitted bool
	// AwaitingRoom: a refusal for capacity, whose pods run scheduling
	// cycles that mark them Unschedulable for cluster autoscalers; their
	// PodScheduled condition is left to the scheduler.
	AwaitingRoom bool
	// Unadmit: remove the admitted-at annotation of a released gang.
	Unadmit bool
	// Check is the admission check a refused unit failed.
	Check queue.Check
	// ClearNomination: remove Pod's nominated node (its unit is not
	// admitted); nothing else is written.
	ClearNomination bool
	Message         string
	// ExpectedStart is when a refused gang's reservation starts, nil
	// without one (ExpectedStartAnnotation).
	ExpectedStart *time.Time
	// EstimatedStart is when a refused gang with no reservation is
	// expected to start if the pods it waits for, which declare no
	// run-time limit, end as their queues' recent pods did; nil without
	// one (EstimatedStartAnnotation).
	EstimatedStart *time.Time
	// Profile reports a gang's Events; a singleton's are its pod's profile's.
	Profile string
}

// Source is the scheduler state the writer reads: the cache. Every method
// copies out under the state's lock and returns without it.
type Source interface {
	// StatusReady reports whether the state has every member the
	// scheduler's informer listed at start: counts are incomplete before.
	StatusReady() bool
	// GroupStatusWork returns the groups whose status or Events may need
	// writing, and forgets them; a group whose write fails is handed back
	// with RetryGroupStatus.
	GroupStatusWork(now time.Time) []Group
	RetryGroupStatus(key types.NamespacedName)
	// MarkAllGroupsDirty hands every group out again at the next pass: a
	// new leader does not know what the previous one left unwritten.
	MarkAllGroupsDirty()
	// RecordGroupMetrics refreshes the per-phase PodGroup gauges.
	RecordGroupMetrics()
	// Admitting reports whether a profile admits through queues; the
	// admission and Queue methods are used only then.
	Admitting() bool
	// AdmissionWrites returns the admission writes queued since the last
	// call, after queueing those of pending units whose verdict changed.
	AdmissionWrites() []Admission
	// Nominations are the pods handed out to have their nomination
	// cleared.
	Nominations() Nominations
	// NodeNames lists the nodes the state knows.
	NodeNames() []string
	// Gated returns those of pods (nominated in the scheduler's memory)
	// whose unit is not admitted.
	Gated(pods []*v1.Pod) []*v1.Pod
	// QueueStatusUpdates returns the Queues whose status changed, with the
	// status to write.
	QueueStatusUpdates() []*qapi.Queue
	// PodGroupsToCreate returns the gangs asked for by annotation whose
	// PodGroup does not exist; one handed out is handed out again only
	// after a few seconds, if its PodGroup is still missing.
	PodGroupsToCreate() []annotation.ToCreate
	// PodNotices returns the Warning Events about pods queued since the
	// last call, each pod's once.
	PodNotices() []PodNotice
	// Protection is the book of bound gang members that lack the
	// annotations keeping autoscalers from scaling their nodes down.
	Protection() Protection
	// Recorder returns the Event recorder of the profile named
	// schedulerName.
	Recorder(schedulerName string) events.EventRecorderLogger
	// OverrunEvictions and FinishOverrun: the pods to evict for running
	// past their run-time limit into a reservation (EvictOverruns).
	OverrunEvictions() []OverrunEviction
	FinishOverrun(e OverrunEviction, err error) bool
}

// Nominations are the pods a Source handed out to have their nomination
// cleared (Source.Nominations).
type Nominations interface {
	// Stale reports whether pod, handed out, still names a node while its
	// unit is not admitted.
	Stale(pod *v1.Pod) bool
	// Settled forgets that the pod uid was handed out, so that a later
	// period may hand it out again.
	Settled(uid types.UID)
}

// Protection is the book of the bound gang members a Source owes the
// annotations that keep autoscalers from scaling their nodes down
// (Source.Protection).
type Protection interface {
	// Take returns at most limit of them, each once (the rest at later
	// calls).
	Take(limit int) []*v1.Pod
	// Retry hands back a pod whose patch failed.
	Retry(pod *v1.Pod)
}

// Nominator is the scheduler's in-memory nominator (fwk.Handle has it).
type Nominator interface {
	NominatedPodsForNode(nodeName string) []fwk.PodInfo
	DeleteNominatedPodIfExists(pod *v1.Pod)
}

// PodGroupSource is what the writer reads of scheduler-plugins'
// PodGroups (schedplugins.Reader).
type PodGroupSource interface {
	// PodGroup returns the PodGroup as the informer has it.
	PodGroup(key types.NamespacedName) (*v1alpha1.PodGroup, bool)
}

// Clients are what the writer writes with, and what it reads of each gang
// API's objects.
type Clients struct {
	PodGroups pgclient.Interface
	// PodGroupObjects reads scheduler-plugins' PodGroups; nil writes none
	// of their status.
	PodGroupObjects PodGroupSource
	// Volcano writes Volcano's PodGroups and Queues; nil when Volcano's API
	// is not served.
	Volcano volcano.Client
	// VolcanoObjects reads Volcano's objects (with Volcano only).
	VolcanoObjects VolcanoSource
	// UpstreamObjects reads upstream's PodGroups; nil when they are not
	// read.
	UpstreamObjects UpstreamSource
	// Queues is nil when no profile admits through queues.
	Queues qclient.Interface
	// Pods patches pods' status (nominations), and writes upstream's
	// PodGroups (scheduling.k8s.io is built in).
	Pods      kubernetes.Interface
	Nominator Nominator
}

// CRDConfig returns a copy of the scheduler's rest config for clients of
// custom resources: the scheduler's asks for protobuf, which CRDs do not
// speak.
func CRDConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = "application/json"
	out.AcceptContentTypes = "application/json"
	return out
}

// Writer writes status for one scheduler process.
type Writer struct {
	src Source
	cl  Clients
}

// New returns a writer of src's status with cl.
func New(src Source, cl Clients) *Writer {
	RegisterMetrics()
	return &Writer{src: src, cl: cl}
}

// Run writes status every period while the process leads, as lead tells,
// each pass bounded by the end of the current leadership so that a write
// cannot outlive it; it returns when ctx ends. Until lead.Follow is called
// it writes nothing.
func (w *Writer) Run(ctx context.Context, period time.Duration, lead *Leadership) {
	logger := klog.FromContext(ctx).WithName("status")
	select {
	case <-lead.resolved:
	case <-ctx.Done():
		return
	}
	writing := false
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		until, ok := lead.Leading(time.Now())
		if !ok {
			if writing {
				logger.Info("Stopped writing PodGroup status: the scheduler is not leading")
				writing = false
			}
			return
		}
		if !writing {
			logger.Info("Writing PodGroup status: the scheduler is leading")
			// The previous leader may have left anything unwritten.
			w.src.MarkAllGroupsDirty()
			writing = true
		}
		if !until.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, until)
			defer cancel()
		}
		w.Sync(ctx)
	}, period)
}

// Sync is one pass: the PodGroups of gangs asked for by annotation, status and Events of the groups that changed since the
// last pass, admission writes, Queue status. Its cost is proportional to
// what changed, not to all groups. Before the state has every member it
// writes nothing (counts would miss members not yet listed).
func (w *Writer) Sync(ctx context.Context) {
	if !w.src.StatusReady() {
		return
	}
	// PodGroups first: a gang asked for by annotation waits for its own.
	w.CreatePodGroups(ctx)
	w.PostPodNotices()
	if w.cl.Pods != nil {
		EvictOverruns(ctx, w.cl.Pods, w.src)
	}
	w.ProtectPods(ctx)
	// Admissions before the groups' status: taking them out notes the
	// pending groups' verdicts, which a Volcano PodGroup's status carries,
	// so both land in the same period.
	w.WriteAdmissions(ctx)
	work := w.src.GroupStatusWork(time.Now())
	w.src.RecordGroupMetrics()
	w.SyncQueues(ctx)
	w.WriteGroups(ctx, work)
}
