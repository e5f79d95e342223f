package status

import (
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// VolcanoSource is what the writer reads of Volcano's objects, when
// Volcano's API is served (volcano.Reader).
type VolcanoSource interface {
	// VolcanoPodGroup and VolcanoQueue return the objects as the
	// informers have them.
	VolcanoPodGroup(key types.NamespacedName) (*vc.PodGroup, bool)
	VolcanoQueue(name string) (*vc.Queue, bool)
	// VolcanoQueueWarnings returns the Warning Events queued since the
	// last call: fields of a Volcano Queue that Caldera does not honour.
	VolcanoQueueWarnings() []volcano.QueueWarning
	// VolcanoQueueCounts is a queue's PodGroups by phase;
	// RecountedVolcanoQueues the queues whose counts changed since the
	// last call.
	VolcanoQueueCounts(name string) volcano.QueueCounts
	RecountedVolcanoQueues() []string
}

// EnsureVolcanoQueue creates Volcano's default Queue unless it exists, as
// volcano-scheduler does when it starts: Volcano's job controller refuses
// every vcjob whose queue is missing, and its webhook gives a vcjob that
// names none the queue "default". A Caldera Queue of that name, if any,
// still decides. Retried as EnsureQueue is; every replica may call it.
func EnsureVolcanoQueue(ctx context.Context, client volcano.Client) {
	q := &vc.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: volcano.DefaultQueue},
		Spec:       vc.QueueSpec{Weight: 1, Reclaimable: ptr.To(true)},
	}
	ensure(ctx, "Cannot create Volcano's default queue; retrying", q.Name, func() error { return client.CreateQueue(ctx, q) })
}

// ReasonUnsupportedField is the reason of the Warning Event on a Volcano
// Queue that sets a field Caldera does not honour.
const ReasonUnsupportedField = "UnsupportedField"

func (w *Writer) volcano() (VolcanoSource, bool) {
	if w.cl.Volcano == nil || w.cl.VolcanoObjects == nil {
		return nil, false
	}
	return w.cl.VolcanoObjects, true
}

// writeVolcanoGroup writes a Volcano PodGroup's status as Volcano's
// closeSession does (volcano.Status) when it differs from the object's.
// The PodGroup CRD has no status subresource, and newer Volcano releases
// add fields Caldera's types do not know (spec.subGroupPolicy in v1.14):
// an update of the whole object decoded with those types would erase
// them, and would collide with the job controller's own updates. So this
// is a merge patch of only the status fields Caldera owns; the rest of
// the object, known to Caldera or not, is never sent. A failure hands the
// group back.
func (w *Writer) writeVolcanoGroup(ctx context.Context, g Group) {
	vs, ok := w.volcano()
	if !ok {
		return
	}
	pg, ok := vs.VolcanoPodGroup(g.Key)
	if !ok || string(pg.UID) != g.Source.UID {
		return // gone, or another object by now
	}
	want := volcano.Status(*pg.Status.DeepCopy(), g.Progress, time.Now())
	if equality.Semantic.DeepEqual(pg.Status, want) {
		return
	}
	patch, err := volcanoStatusPatch(pg.UID, want)
	if err == nil {
		err = w.patchPodGroup(ctx, *g.Source, patch)
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		writeErrors.WithLabelValues(WritePodGroupStatus).Inc()
		klog.FromContext(ctx).Error(err, "Cannot write Volcano PodGroup status; will retry", "podGroup", g.Key.String())
		w.src.RetryGroupStatus(g.Key)
	}
}

// volcanoStatusPatch is the merge patch that sets the status fields
// Caldera owns to st's, each named even when zero (a count back to 0
// must be written, and Volcano's types omit zeros), on the object of uid
// only: a PodGroup deleted and recreated under the name since it was read
// refuses the patch (a uid is immutable) instead of taking another
// object's status, and the next period reads the new object.
func volcanoStatusPatch(uid types.UID, st vc.PodGroupStatus) ([]byte, error) {
	conds := st.Conditions
	if conds == nil {
		conds = []vc.PodGroupCondition{}
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": uid},
		"status": map[string]any{
			"phase": st.Phase, "running": st.Running, "succeeded": st.Succeeded, "failed": st.Failed,
			"conditions": conds,
		},
	})
}

// patchPodGroup merge-patches the PodGroup src names, through the client
// of its dialect.
func (w *Writer) patchPodGroup(ctx context.Context, src groupspec.Source, patch []byte) error {
	switch src.Dialect {
	case groupspec.Upstream:
		return w.patchUpstreamPodGroup(ctx, src.Namespace, src.Name, patch)
	case groupspec.Volcano:
		if w.cl.Volcano == nil {
			return nil
		}
		return w.cl.Volcano.PatchPodGroup(ctx, src.Namespace, src.Name, patch)
	}
	_, err := w.cl.PodGroups.SchedulingV1alpha1().PodGroups(src.Namespace).Patch(ctx, src.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// writeVolcanoQueue writes a Volcano Queue's status as Volcano reads it:
// allocated from the status Caldera computed for its model q (nil: the
// counts changed, allocated stays), and the counts of its PodGroups by
// phase, as vcctl and Volcano's queue controller count them (Caldera's own
// count per admission unit would count singleton pods and other
// dialects' gangs too). The state stays the queue controller's, Open
// when none set it.
func (w *Writer) writeVolcanoQueue(ctx context.Context, name string, q *qapi.Queue) {
	vs, ok := w.volcano()
	if !ok {
		return
	}
	cur, ok := vs.VolcanoQueue(name)
	if !ok || q != nil && cur.UID != q.UID {
		return
	}
	want := *cur.Status.DeepCopy()
	n := vs.VolcanoQueueCounts(name)
	want.Pending, want.Inqueue, want.Running, want.Unknown, want.Completed = n.Pending, n.Inqueue, n.Running, n.Unknown, n.Completed
	if q != nil {
		want.Allocated = q.Status.Allocated
	}
	if want.State == "" {
		want.State = vc.QueueStateOpen
	}
	if equality.Semantic.DeepEqual(cur.Status, want) {
		return
	}
	cp := cur.DeepCopy()
	cp.Status = want
	if err := w.cl.Volcano.UpdateQueueStatus(ctx, cp); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		writeErrors.WithLabelValues(WriteQueueStatus).Inc()
		klog.FromContext(ctx).Error(err, "Cannot write Volcano Queue status", "queue", name)
	}
}

// warnVolcanoQueues posts the queued Warning Events on Volcano Queues.
func (w *Writer) warnVolcanoQueues() {
	vs, ok := w.volcano()
	if !ok {
		return
	}
	for _, qw := range vs.VolcanoQueueWarnings() {
		ref := &v1.ObjectReference{APIVersion: volcano.APIVersion, Kind: "Queue", Name: qw.Queue.Name,
			UID: qw.Queue.UID, ResourceVersion: qw.Queue.ResourceVersion}
		w.src.Recorder("").Eventf(ref, nil, v1.EventTypeWarning, ReasonUnsupportedField, "Admission", "%s", qw.Message)
	}
}
