package kubectlcaldera

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/plugins/args"
	"github.com/caldera-sched/caldera/pkg/plugins/enqueue"
	"github.com/caldera-sched/caldera/pkg/plugins/reclaim"
)

// shippedProfiles are the Caldera profiles of the shipped configuration
// (manifests/scheduler/config.yaml): what-if assumes them without --config.
var shippedProfiles = []string{"caldera-scheduler", "caldera-scheduler-spread"}

// schedulerSettings are what the scheduler's plugins set up in its cache
// from their args: what a snapshot cache must be given to decide alike.
type schedulerSettings struct {
	admission        admission.Options
	profiles         []string
	reclaim, preempt bool
	// reclaimSet: a profile enabling CalderaReclaim was read.
	reclaimSet bool
	// minRuntime is CalderaReclaim's minVictimRuntimeSeconds.
	minRuntime time.Duration
}

// loadSettings reads the scheduler's KubeSchedulerConfiguration file (""
// for the shipped configuration's profiles with every arg defaulted): the
// profiles that enable CalderaEnqueue, and CalderaEnqueue's and
// CalderaReclaim's args, decoded, defaulted and validated as the plugins
// do. Profiles must agree on CalderaEnqueue's args, as the scheduler
// demands.
func loadSettings(file string) (schedulerSettings, error) {
	var s schedulerSettings
	if file == "" {
		var ea enqueue.Args
		var ra reclaim.Args
		if err := args.Load(enqueue.Name, nil, &ea); err != nil {
			return s, err
		}
		if err := args.Load(reclaim.Name, nil, &ra); err != nil {
			return s, err
		}
		return schedulerSettings{admission: ea.Options(), profiles: shippedProfiles,
			reclaim: *ra.EnableReclaim, preempt: *ra.EnablePreemption,
			minRuntime: time.Duration(*ra.MinVictimRuntimeSeconds) * time.Second}, nil
	}
	cfg, err := loadSchedulerConfig(file)
	if err != nil {
		return s, fmt.Errorf("reading the scheduler configuration: %w", err)
	}
	first := true
	for _, p := range cfg.Profiles {
		if err := s.addReclaim(p); err != nil {
			return s, err
		}
		if !enabled(p.Plugins, enqueue.Name) {
			continue
		}
		var ea enqueue.Args
		if err := args.Load(enqueue.Name, pluginArgs(p, enqueue.Name), &ea); err != nil {
			return s, fmt.Errorf("profile %s: %w", p.SchedulerName, err)
		}
		if first {
			s.admission, first = ea.Options(), false
		} else if ea.Options() != s.admission {
			return s, fmt.Errorf("profile %s: CalderaEnqueue args differ from another profile's", p.SchedulerName)
		}
		s.profiles = append(s.profiles, p.SchedulerName)
	}
	if first {
		return s, fmt.Errorf("%s: no profile enables %s: nothing is admitted through queues", file, enqueue.Name)
	}
	return s, nil
}

// addReclaim takes profile p's CalderaReclaim args, if it enables it. The
// scheduler refuses profiles that disagree on enableReclaim and
// enablePreemption (one admission pass counts eviction room for all), so
// what-if does too; minVictimRuntimeSeconds may differ (each profile's
// loadSchedulerConfig decodes the KubeSchedulerConfiguration in file, with
// defaults, as kube-scheduler's --config does; through the scheduler's
// config scheme alone, so that the command does not link the scheduler.
func loadSchedulerConfig(file string) (*config.KubeSchedulerConfiguration, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	obj, gvk, err := schedscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s holds a %s, not a KubeSchedulerConfiguration", file, gvk)
	}
	return cfg, nil
}

// plugin applies its own), and the longest is the copy's.
func (s *schedulerSettings) addReclaim(p config.KubeSchedulerProfile) error {
	if !enabled(p.Plugins, reclaim.Name) {
		return nil
	}
	var ra reclaim.Args
	if err := args.Load(reclaim.Name, pluginArgs(p, reclaim.Name), &ra); err != nil {
		return fmt.Errorf("profile %s: %w", p.SchedulerName, err)
	}
	if s.reclaimSet && (s.reclaim != *ra.EnableReclaim || s.preempt != *ra.EnablePreemption) {
		return fmt.Errorf("profile %s: CalderaReclaim's enableReclaim and enablePreemption differ from another profile's", p.SchedulerName)
	}
	s.reclaimSet, s.reclaim, s.preempt = true, *ra.EnableReclaim, *ra.EnablePreemption
	s.minRuntime = max(s.minRuntime, time.Duration(*ra.MinVictimRuntimeSeconds)*time.Second)
	return nil
}

// enabled says whether plugins enable name at any extension point.
func enabled(plugins *config.Plugins, name string) bool {
	if plugins == nil {
		return false
	}
	for _, set := range []config.PluginSet{plugins.MultiPoint, plugins.PreEnqueue, plugins.PostFilter} {
		if slices.ContainsFunc(set.Enabled, func(p config.Plugin) bool { return p.Name == name }) {
			return true
		}
	}
	return false
}

// pluginArgs is the profile's args for name, nil without any.
func pluginArgs(p config.KubeSchedulerProfile, name string) runtime.Object {
	for _, pc := range p.PluginConfig {
		if pc.Name == name {
			return pc.Args
		}
	}
	return nil
}

// jobObjects are the objects of the job a user asks about, as the cluster
// would hold them once submitted.
type jobObjects struct {
	pods      []*corev1.Pod
	podGroups []*v1alpha1.PodGroup
	// ignored names the objects of the file that schedule nothing
	// (Services, ConfigMaps, ...), as Kind/name.
	ignored []string
}

// whatIfScheme decodes what a job file may hold.
var whatIfScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// readJob decodes the job file: Pods, PodGroups and Jobs, in namespace ns
// when they name none. A Job becomes the pods its controller would create
// first (parallelism of them, at most completions), owned by it: the
// prediction is about what the scheduler would be handed.
func readJob(r io.Reader, ns string, now time.Time) (jobObjects, error) {
	var out jobObjects
	decoder := serializer.NewCodecFactory(whatIfScheme).UniversalDeserializer()
	docs := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("reading the job file: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			// A custom resource of another operator: the scheduler
			// sees only the pods its controller would create.
			var tm metav1.PartialObjectMetadata
			if yerr := sigsyaml.Unmarshal(doc, &tm); yerr != nil || tm.Kind == "" {
				return out, fmt.Errorf("decoding the job file: %w", err)
			}
			out.ignored = append(out.ignored, tm.Kind+"/"+tm.Name)
			continue
		}
		if err != nil {
			return out, fmt.Errorf("decoding the job file: %w", err)
		}
		switch o := obj.(type) {
		case *corev1.Pod:
			out.pods = append(out.pods, submitted(o, ns, now))
		case *v1alpha1.PodGroup:
			setMeta(&o.ObjectMeta, ns, "PodGroup", now)
			out.podGroups = append(out.podGroups, o)
		case *batchv1.Job:
			setMeta(&o.ObjectMeta, ns, "Job", now)
			out.pods = append(out.pods, jobPods(o, now)...)
		case *appsv1.Deployment, *appsv1.StatefulSet, *appsv1.ReplicaSet, *batchv1.CronJob:
			return out, fmt.Errorf("the job file holds a %s: what-if reads Pods, Jobs and PodGroups (scheduling.x-k8s.io); write its pods as a Job or Pods to ask about them", gvk.Kind)
		default:
			name := gvk.Kind
			if acc, err := meta.Accessor(obj); err == nil {
				name += "/" + acc.GetName()
			}
			out.ignored = append(out.ignored, name)
		}
	}
	if len(out.pods) == 0 {
		return out, errors.New("the job file holds no Pod or Job")
	}
	return out, nil
}

// setMeta gives a decoded object what the API server would: a namespace,
// a UID and a creation time.
func setMeta(m *metav1.ObjectMeta, ns, kind string, now time.Time) {
	if m.Namespace == "" {
		m.Namespace = ns
	}
	m.UID = types.UID("what-if-" + kind + "-" + m.Namespace + "-" + m.Name)
	m.CreationTimestamp = metav1.NewTime(now)
}

// submitted is pod as the API server would store it: pending, unbound,
// with the default scheduler name when it names none.
func submitted(p *corev1.Pod, ns string, now time.Time) *corev1.Pod {
	p = p.DeepCopy()
	setMeta(&p.ObjectMeta, ns, "Pod", now)
	if p.Spec.SchedulerName == "" {
		p.Spec.SchedulerName = corev1.DefaultSchedulerName
	}
	p.Spec.NodeName = ""
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return p
}

// jobPods are the pods job's controller creates first.
func jobPods(job *batchv1.Job, now time.Time) []*corev1.Pod {
	n := int32(1)
	if job.Spec.Parallelism != nil {
		n = *job.Spec.Parallelism
	}
	if job.Spec.Completions != nil && *job.Spec.Completions < n {
		n = *job.Spec.Completions
	}
	indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
	yes := true
	var pods []*corev1.Pod
	for i := range n {
		p := &corev1.Pod{ObjectMeta: *job.Spec.Template.ObjectMeta.DeepCopy(), Spec: *job.Spec.Template.Spec.DeepCopy()}
		p.Name = fmt.Sprintf("%s-%d", job.Name, i)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[batchv1.JobNameLabel] = job.Name
		p.Labels[batchv1.ControllerUidLabel] = string(job.UID)
		if indexed {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[batchv1.JobCompletionIndexAnnotation] = fmt.Sprint(i)
		}
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: &yes,
		}}
		pods = append(pods, submitted(p, job.Namespace, now))
	}
	return pods
}

// listCluster lists what the scheduler's cache reads, for the copy.
func listCluster(ctx context.Context, cs clientSet, quotas bool) (*feed.Listed, error) {
	pods, err := cs.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	nodes, err := cs.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	nss, err := cs.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	pgs, err := cs.podGroup.SchedulingV1alpha1().PodGroups("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PodGroups: %w", err)
	}
	queues, err := cs.queue.SchedulingV1alpha1().Queues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Queues: %w", err)
	}
	// Jobs' deadlines are run-time limits of their pods (the feed watches
	// them).
	jobs, err := cs.kube.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Jobs: %w", err)
	}
	l := &feed.Listed{Pods: pointers(pods.Items), Nodes: pointers(nodes.Items), Namespaces: pointers(nss.Items),
		PodGroups: pointers(pgs.Items), Queues: pointers(queues.Items), Jobs: pointers(jobs.Items)}
	if quotas {
		rqs, err := cs.kube.CoreV1().ResourceQuotas("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing ResourceQuotas: %w", err)
		}
		l.Quotas = pointers(rqs.Items)
	}
	return l, nil
}

// pointers points at each of items.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// addJob adds the job's objects to the listed cluster; a name already
// taken is an error, as the API server would answer.
func addJob(l *feed.Listed, job jobObjects) error {
	for _, p := range job.pods {
		if slices.ContainsFunc(l.Pods, func(q *corev1.Pod) bool { return q.Namespace == p.Namespace && q.Name == p.Name }) {
			return fmt.Errorf("pod %s/%s already exists: what-if asks about a job not yet submitted", p.Namespace, p.Name)
		}
		l.Pods = append(l.Pods, p)
	}
	return addPodGroups(l, job.podGroups)
}

// addPodGroups adds pgs to the listed PodGroups.
func addPodGroups(l *feed.Listed, pgs []*v1alpha1.PodGroup) error {
	for _, pg := range pgs {
		if slices.ContainsFunc(l.PodGroups, func(q *v1alpha1.PodGroup) bool { return q.Namespace == pg.Namespace && q.Name == pg.Name }) {
			return fmt.Errorf("PodGroup %s/%s already exists: what-if asks about a job not yet submitted", pg.Namespace, pg.Name)
		}
		l.PodGroups = append(l.PodGroups, pg)
	}
	return nil
}
