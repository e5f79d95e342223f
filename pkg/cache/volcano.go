package cache

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
	vclisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Volcano's gangs (scheduling.volcano.sh/v1beta1) are a second source of
// the cache's one group and queue model: pkg/dialect/volcano turns each
// PodGroup into the model object a scheduler-plugins PodGroup is, marked
// with Volcano's apiVersion, and each Queue into a Caldera Queue; from then
// on gang readiness, admission, fair share, reclaim and placement do not
// know the source. What differs lives here: Volcano's job controller
// creates a job's pods only once its PodGroup is Inqueue, so such a gang is
// admitted before any member exists (promisedMembers, missingClass), and
// its status is Volcano's (volcanoProgressLocked, written by pkg/status).
//
// Both dialects name groups by namespace and name, so they share one key
// space: the PodGroup seen first holds a name, and one of the other dialect
// under the same name is ignored until the first is deleted and the second
// changes (shadowedLocked). Caldera's Queue of a name wins over Volcano's
// (Volcano's "default" queue among them): queueShadowedLocked.

// volcanoState is the cache's reading of Volcano's API; the zero value is
// off (the API is not served).
type volcanoState struct {
	on       bool
	client   status.VolcanoClient
	pgLister vclisters.PodGroupLister
	qLister  vclisters.QueueLister
	// warned is, per Volcano Queue, the fields Caldera does not honour it
	// last reported; warnings are the reports not yet handed to the
	// writer, the latest per Queue (a follower hands none out, so they
	// stay bounded by the Queues). Guarded by c.mu.
	warned   map[string]string
	warnings map[string]status.QueueWarning
}

// VolcanoClient is the client of Volcano's API, nil when it is not served;
// the command hands it to the status writer.
func (c *Cache) VolcanoClient() status.VolcanoClient { return c.volcano.client }

// watchVolcano sets up the informers of Volcano's PodGroups and Queues when
// the API server serves them (discovered once, here: a scheduler started
// before the CRDs were installed reads them after a restart); finished
// members that join by annotation come from watchJoinedFinished. Absent, it
// does nothing.
func (c *Cache) watchVolcano(ctx context.Context, h fwk.Handle, cfg *rest.Config) error {
	logger := klog.FromContext(ctx)
	served, err := volcanoServed(h)
	if err != nil {
		return err
	}
	if !served {
		logger.V(2).Info("Volcano's scheduling API is not served; reading no Volcano PodGroups or Queues", "apiVersion", volcano.APIVersion)
		return nil
	}
	client, err := vcclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building Volcano client: %w", err)
	}
	v := &c.volcano
	v.on, v.client, v.warned = true, status.VolcanoClientFor(client), map[string]string{}
	factory := vcinformers.NewSharedInformerFactory(client, 0)
	pgInf := factory.Scheduling().V1beta1().PodGroups()
	qInf := factory.Scheduling().V1beta1().Queues()
	v.pgLister, v.qLister = pgInf.Lister(), qInf.Lister()
	pgReg, err := pgInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onGroup(logger, volcanoSpec(obj)) },
		UpdateFunc: func(old, obj any) { c.onGroupUpdate(logger, volcanoSpec(old), volcanoSpec(obj)) },
		DeleteFunc: func(obj any) { c.onGroupDelete(logger, volcanoSpec(obj)) },
	})
	if err != nil {
		return err
	}
	qReg, err := qInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onVolcanoQueue(obj, false) },
		UpdateFunc: func(_, obj any) { c.onVolcanoQueue(obj, false) },
		DeleteFunc: func(obj any) { c.onVolcanoQueue(obj, true) },
	})
	if err != nil {
		return err
	}
	return c.setUp("Volcano's PodGroups and Queues", func(ctx context.Context, logger klog.Logger) error {
		factory.Start(ctx.Done())
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		for _, r := range []cache.ResourceEventHandlerRegistration{pgReg, qReg} {
			if !cache.WaitFor(syncCtx, "", r.HasSyncedChecker()) {
				return fmt.Errorf("Volcano's PodGroups or Queues did not sync within %v: can the scheduler read scheduling.volcano.sh (manifests/components/volcano)?", syncTimeout)
			}
		}
		logger.V(2).Info("Caldera cache synced Volcano's PodGroups and Queues")
		return nil
	})
}

// volcanoServed reports whether the API server serves Volcano's PodGroups
// and Queues. Not served is no error; failing to ask is.
func volcanoServed(h fwk.Handle) (bool, error) {
	if h.ClientSet() == nil {
		return false, nil
	}
	list, err := h.ClientSet().Discovery().ServerResourcesForGroupVersion(volcano.APIVersion)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", volcano.APIVersion, err)
	}
	has := func(name string) bool {
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == name })
	}
	return has("podgroups") && has("queues"), nil
}

// volcanoSpec reads an informer event's Volcano PodGroup as a group spec
// (nil for anything else, which the handlers ignore).
func volcanoSpec(obj any) *groupspec.Spec {
	pg, ok := objectOf[*vc.PodGroup](obj)
	if !ok || pg == nil {
		return nil
	}
	return volcano.Spec(pg)
}

// shadowedLocked reports whether s, of one dialect, names a group whose
// object is of another: the first holds the name (see above).
func shadowedLocked(logger klog.Logger, g *group, s *groupspec.Spec) bool {
	if g.obj == nil || g.obj.Source.Dialect == s.Source.Dialect {
		return false
	}
	logger.V(2).Info("Two gang APIs name one PodGroup; the one seen first is scheduled", "podGroup", g.key.String(),
		"held", g.obj.Source.APIVersion, "ignored", s.Source.APIVersion)
	return true
}

// queueShadowedLocked reports whether q, a Volcano Queue, names a Caldera
// Queue the cache holds: Caldera's is the queue.
func queueShadowedLocked(held, q *qapi.Queue) bool {
	return held != nil && volcano.IsVolcanoQueue(q) && !volcano.IsVolcanoQueue(held)
}

// onVolcanoQueue takes a Volcano Queue event. When a profile admits
// through queues its model goes to onQueue, and the fields Caldera does
// not honour are queued for a Warning Event, once per change of that list.
func (c *Cache) onVolcanoQueue(obj any, deleted bool) {
	in, _ := objectOf[*vc.Queue](obj)
	if in == nil {
		return
	}
	model, ignored, ok := volcano.Queue(in)
	if !ok {
		return
	}
	c.mu.Lock()
	v := &c.volcano
	on := c.adm.on()
	switch {
	case deleted:
		delete(v.warned, in.Name)
		delete(v.warnings, in.Name)
	case !on:
		// Queues are not read without admission, so none is warned about
		// (and no warning waits for a writer that never takes it).
	default:
		var fields []string
		for _, i := range ignored {
			fields = append(fields, i.Field+" ("+i.Why+")")
		}
		if list := strings.Join(fields, "; "); list != v.warned[in.Name] {
			v.warned[in.Name] = list
			if list == "" {
				delete(v.warnings, in.Name)
			} else {
				if v.warnings == nil {
					v.warnings = map[string]status.QueueWarning{}
				}
				v.warnings[in.Name] = status.QueueWarning{Queue: in.DeepCopy(), Message: "Caldera does not honour " + list}
			}
		}
	}
	c.mu.Unlock()
	if on {
		c.onQueue(model, deleted)
	}
}

// VolcanoQueueWarnings implements status.VolcanoSource: the Warning Events
// queued since the last call.
func (c *Cache) VolcanoQueueWarnings() []status.QueueWarning {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]status.QueueWarning, 0, len(c.volcano.warnings))
	for _, w := range c.volcano.warnings {
		out = append(out, w)
	}
	c.volcano.warnings = nil
	return out
}

// VolcanoPodGroup implements status.VolcanoSource: the Volcano PodGroup as
// the informer has it.
func (c *Cache) VolcanoPodGroup(key types.NamespacedName) (*vc.PodGroup, bool) {
	if !c.volcano.on {
		return nil, false
	}
	pg, err := c.volcano.pgLister.PodGroups(key.Namespace).Get(key.Name)
	return pg, err == nil
}

// VolcanoQueue implements status.VolcanoSource: the Volcano Queue as the
// informer has it.
func (c *Cache) VolcanoQueue(name string) (*vc.Queue, bool) {
	if !c.volcano.on {
		return nil, false
	}
	q, err := c.volcano.qLister.Get(name)
	return q, err == nil
}

// membersAfterAdmission reports whether g's controller creates its members
// only once it is admitted (groupspec.Rules).
func (g *group) membersAfterAdmission() bool {
	return g.obj != nil && g.obj.Rules.MembersAfterAdmission
}

// promisedMembers is the member count admission sees for g: the members
// Caldera can place, or, for a gang whose controller creates them only once
// it is admitted, at least its minMember.
func promisedMembers(g *group) int32 {
	n := int32(g.counts.Reachable())
	if g.membersAfterAdmission() && n < g.spec.MinMember {
		return g.spec.MinMember
	}
	return n
}

// awaitsMembers reports whether g is a gang created members-after-admission
// none of whose members exist yet: admitted, it reserves its minimum for
// the pods its controller is about to create. One that started (its object
// says so, as after a restart) and has no member left is done and reserves
// nothing.
func awaitsMembers(g *group) bool {
	return g.counts.Members == 0 && g.membersAfterAdmission() && !g.obj.Started
}

// leftover reports whether pod, terminating, is left over from an earlier
// PodGroup of g's name, for a gang created members-after-admission:
// created before g's object, it belonged to the one its controller deleted
// and made again to restart the job (Volcano's policy RestartJob). Such a pod is not a member of the new gang, which
// would otherwise count as Running, and started, on pods about to go; its
// node room stays counted as any pod's is until it is gone. Creation times
// are whole seconds, so a pod created in the same second as the new object
// stays a member.
func leftover(g *group, pod *v1.Pod) bool {
	return pod.DeletionTimestamp != nil && g != nil && g.membersAfterAdmission() &&
		pod.CreationTimestamp.Time.Before(g.obj.Source.Created)
}

// leftoverLocked is leftover for the group of key.
func (c *Cache) leftoverLocked(key GroupKey, pod *v1.Pod) bool {
	return leftover(c.groups[key], pod)
}

// dropLeftoversLocked takes the leftover pods out of g, whose PodGroup just
// appeared. O(members), once per PodGroup object.
func (c *Cache) dropLeftoversLocked(g *group) {
	for uid, m := range g.members {
		if leftover(g, m.pod) {
			c.removeMemberLocked(g.key, uid)
		}
	}
}

// noConstraints is the pod a member not yet created is placed as.
var noConstraints = &v1.Pod{}

// missingClass is the placement class of n members of g that do not exist
// yet. Members created before admission cannot be placed until they exist.
// Those of a gang created members-after-admission each ask for an even
// share of minResources (rounded up), on any node without a taint: all
// that is known of pods not yet created.
func (pp *passPlacement) missingClass(g *group, n int) placement.Class {
	if !g.membersAfterAdmission() {
		return placement.Class{Request: make([]int64, pp.free.R), Count: n, Nodes: []int32{}}
	}
	per := resources.List{}
	if m := int64(g.spec.MinMember); m > 0 {
		for k, v := range g.spec.MinResources {
			per[k] = (v + m - 1) / m
		}
	}
	return pp.classOf(noConstraints, per, n)
}
