package status

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// AdmissionAction is the Event's action for a decision: the check a refused
// unit failed is in it. client-go's events library folds Events of one
// object with the same reason and action into one series that keeps its
// first note, so with one action for every refusal a unit refused for its
// queue's capability and then for fair share kept showing the capability
// message.
func AdmissionAction(admitted bool, check queue.Check) string {
	if admitted {
		return "Admission"
	}
	return "Admission" + check.String()
}

// WriteAdmissions is the leader's side of admission: Events, the
// admitted-at annotation that lets a restarted scheduler know a gang was
// admitted without admitting it again past capacity, and the removal of
// the nominations of pods whose unit is not admitted.
func (w *Writer) WriteAdmissions(ctx context.Context) {
	if !w.src.Admitting() {
		return
	}
	writes := w.src.AdmissionWrites()
	w.DropGatedNominations()
	for _, a := range writes {
		w.writeAdmission(ctx, a)
	}
}

func (w *Writer) writeAdmission(ctx context.Context, a Admission) {
	logger := klog.FromContext(ctx)
	if a.ClearNomination {
		w.clearNomination(ctx, a.Pod)
		return
	}
	var pg *groupObject
	if a.PodGroup != nil {
		got, ok := w.groupObject(a.Dialect, *a.PodGroup)
		if !ok || got.src.UID != string(a.UID) {
			return // gone, or another object by now
		}
		pg = &got
	}
	if a.Unadmit {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, qapi.AdmittedAtAnnotation)
		if err := w.patchPodGroup(ctx, pg.src, []byte(patch)); err != nil && !apierrors.IsNotFound(err) {
			writeErrors.WithLabelValues(WritePodGroupAnnotation).Inc()
			logger.Error(err, "Cannot clear admission on PodGroup", "podGroup", a.PodGroup.String())
		}
		return
	}
	rec := w.src.Recorder(a.Profile)
	if a.Pod != nil {
		rec = w.src.Recorder(a.Pod.Spec.SchedulerName)
	}
	reason, typ := "NotAdmitted", v1.EventTypeWarning
	if a.Admitted {
		reason, typ = "Admitted", v1.EventTypeNormal
	}
	w.tellWaiting(ctx, a)
	if pg == nil {
		if a.Pod != nil {
			rec.Eventf(a.Pod, nil, typ, reason, AdmissionAction(a.Admitted, a.Check), "%s", a.Message)
		}
		return
	}
	rec.Eventf(GroupRef(pg.src), nil, typ, reason, AdmissionAction(a.Admitted, a.Check), "%s", a.Message)
	// One merge patch: on admission the admitted-at annotation (once) and
	// the verdict's removal; on a refusal the verdict, when it changed.
	ann := map[string]any{}
	if a.Admitted {
		if pg.annotations[qapi.AdmittedAtAnnotation] == "" {
			ann[qapi.AdmittedAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
		}
		if _, ok := pg.annotations[qapi.VerdictAnnotation]; ok {
			ann[qapi.VerdictAnnotation] = nil
		}
	} else if pg.annotations[qapi.VerdictAnnotation] != a.Message {
		ann[qapi.VerdictAnnotation] = a.Message
	}
	setStart(ann, pg.annotations, qapi.ExpectedStartAnnotation, a.ExpectedStart, a.Admitted)
	setStart(ann, pg.annotations, qapi.EstimatedStartAnnotation, a.EstimatedStart, a.Admitted)
	if len(ann) == 0 {
		return
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return
	}
	if err := w.patchPodGroup(ctx, pg.src, patch); err != nil && !apierrors.IsNotFound(err) {
		writeErrors.WithLabelValues(WritePodGroupAnnotation).Inc()
		logger.Error(err, "Cannot record the admission decision on PodGroup", "podGroup", a.PodGroup.String())
	}
}

// groupObject is what the admission writer reads of a gang's PodGroup.
type groupObject struct {
	src         groupspec.Source
	annotations map[string]string
}

// groupObject reads the PodGroup of dialect d named key from the state's
// informer of that dialect.
func (w *Writer) groupObject(d groupspec.Dialect, key types.NamespacedName) (groupObject, bool) {
	var meta *metav1.ObjectMeta
	var apiVersion string
	switch d {
	case groupspec.Volcano:
		if vs, ok := w.volcano(); ok {
			if pg, ok := vs.VolcanoPodGroup(key); ok {
				meta, apiVersion = &pg.ObjectMeta, volcano.APIVersion
			}
		}
	case groupspec.Upstream:
		if us, ok := w.upstream(); ok {
			if pg, ok := us.UpstreamPodGroup(key); ok {
				meta, apiVersion = &pg.ObjectMeta, upstream.APIVersion
			}
		}
	default:
		if pg, ok := w.podGroup(key); ok {
			meta, apiVersion = &pg.ObjectMeta, schedplugins.APIVersion
		}
	}
	if meta == nil {
		return groupObject{}, false
	}
	return groupObject{
		src: groupspec.Source{Dialect: d, APIVersion: apiVersion, Namespace: meta.Namespace, Name: meta.Name,
			UID: string(meta.UID), ResourceVersion: meta.ResourceVersion},
		annotations: meta.Annotations,
	}, true
}

// clearNomination removes pod's status.nominatedNodeName if its unit is
// still not admitted. The uid and resourceVersion in the patch are
// preconditions: a pod recreated under the name, or one that changed since
// (re-admitted and nominated afresh by a new plan), is left alone.
func (w *Writer) clearNomination(ctx context.Context, pod *v1.Pod) {
	if !w.src.Nominations().Stale(pod) {
		w.src.Nominations().Settled(pod.UID)
		return
	}
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"resourceVersion":%q},"status":{"nominatedNodeName":null}}`, pod.UID, pod.ResourceVersion)
	_, err := w.cl.Pods.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		klog.FromContext(ctx).V(3).Info("Cleared the nomination of a pod whose group is not admitted", "pod", klog.KObj(pod), "node", pod.Status.NominatedNodeName)
		return
	}
	writeErrors.WithLabelValues(WritePodNomination).Inc()
	klog.FromContext(ctx).Error(err, "Cannot clear the nomination of a pod whose group is not admitted", "pod", klog.KObj(pod))
	w.src.Nominations().Settled(pod.UID) // queued again at the next period
}

// DropGatedNominations removes from the scheduler's memory the nominations
// of pods whose unit is not admitted. CalderaReclaim nominates a gang's
// other members to the nodes its plan frees only in memory (they are never
// written to the API, so clearNomination cannot reach them), and
// kube-scheduler keeps such a nomination through pod updates until the pod
// runs a cycle; a released gang, gated in PreEnqueue, runs none, and its
// members kept that room from every pod of lower or equal priority. The
// nominator is the scheduling queue every profile shares. O(nodes +
// nominated pods) per status period; the nominator is asked without the
// state's lock.
func (w *Writer) DropGatedNominations() {
	if w.cl.Nominator == nil {
		return
	}
	var nominated []*v1.Pod
	for _, n := range w.src.NodeNames() {
		for _, pi := range w.cl.Nominator.NominatedPodsForNode(n) {
			nominated = append(nominated, pi.GetPod())
		}
	}
	if len(nominated) == 0 {
		return
	}
	for _, p := range w.src.Gated(nominated) {
		w.cl.Nominator.DeleteNominatedPodIfExists(p)
	}
}

// SyncQueues writes the status of each Queue whose status changed.
func (w *Writer) SyncQueues(ctx context.Context) {
	if !w.src.Admitting() {
		return
	}
	w.warnVolcanoQueues()
	written := map[string]bool{}
	for _, q := range w.src.QueueStatusUpdates() {
		if volcano.IsVolcanoQueue(q) {
			w.writeVolcanoQueue(ctx, q.Name, q)
			written[q.Name] = true
			continue
		}
		if _, err := w.cl.Queues.SchedulingV1alpha1().Queues().UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			writeErrors.WithLabelValues(WriteQueueStatus).Inc()
			klog.FromContext(ctx).Error(err, "Cannot write Queue status", "queue", q.Name)
		}
	}
	if vs, ok := w.volcano(); ok {
		for _, name := range vs.RecountedVolcanoQueues() {
			if !written[name] {
				w.writeVolcanoQueue(ctx, name, nil)
			}
		}
	}
}

// EnsureQueue creates the Queue named name (weight 1, reclaimable, open)
// unless it exists, retrying every 5 seconds until it does or ctx ends.
// Every replica may call it: creation is idempotent.
func EnsureQueue(ctx context.Context, client qclient.Interface, name string) {
	q := &qapi.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       qapi.QueueSpec{Weight: 1, Reclaimable: ptr.To(true), State: qapi.QueueStateOpen},
	}
	ensure(ctx, "Cannot create the default queue; retrying", name, func() error {
		_, err := client.SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{})
		return err
	})
}

// ensure calls create until it succeeds or answers AlreadyExists, every 5
// seconds, logging each other failure with msg, until ctx ends.
func ensure(ctx context.Context, msg, name string, create func() error) {
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		err := create()
		if err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		logger.Error(err, msg, "queue", name)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// setStart puts into patch ann the change of start annotation key from
// what the PodGroup has (have): at, until admitted; removed otherwise.
func setStart(ann map[string]any, have map[string]string, key string, at *time.Time, admitted bool) {
	v := ""
	if at != nil && !admitted {
		v = at.UTC().Format(time.RFC3339)
	}
	if old, ok := have[key]; v == "" && ok {
		ann[key] = nil
	} else if v != "" && old != v {
		ann[key] = v
	}
}
