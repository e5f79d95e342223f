package kubectlcaldera

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
)

// explainOptions are the explain command's own flags.
type explainOptions struct {
	namespace    string
	defaultQueue string
}

func newExplainCommand(o *options) *cobra.Command {
	eo := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain (pod|podgroup)/NAME | NAME",
		Short: "Why a pod or gang waits: its stage, the numbers behind each check, what would change it",
		Long: `explain shows why a pod or a gang (PodGroup) is not running: the stage the
scheduler holds it at (members missing, admission to its queue, the nodes),
the scheduler's own verdict, and the numbers behind the queue checks from
what the scheduler last wrote in each Queue's status along the queue's path
to the top (capability and deserved share against allocated, against what
the job needs), with what would change the outcome. A bare NAME is looked
up as a PodGroup first, then as a pod. It only reads.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			cs, ns, err := o.allClients()
			if err != nil {
				return err
			}
			if eo.namespace != "" {
				ns = eo.namespace
			}
			in, err := eo.gather(cmd.Context(), cs.kube, cs.podGroup, cs.queue, ns, args[0])
			if err != nil {
				return err
			}
			return printExplanation(cmd.OutOrStdout(), Explain(in, time.Now()), o.output)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&eo.namespace, "namespace", "n", "", "the namespace (default: the kubeconfig context's)")
	fs.StringVar(&eo.defaultQueue, "default-queue", "default", "the queue of jobs that name none (CalderaEnqueue's defaultQueue)")
	return cmd
}

// ExplainInput is what explain reads from the cluster: the job (a PodGroup
// and its members, or one pod), its namespace's queue label, every Queue,
// and the Events about the job.
type ExplainInput struct {
	PodGroup *v1alpha1.PodGroup
	// Pods are the PodGroup's members, or the one pod asked about.
	Pods           []corev1.Pod
	NamespaceQueue string
	DefaultQueue   string
	Queues         []qapi.Queue
	Events         []eventsv1.Event
}

// gather reads the job named by arg ("pod/x", "podgroup/x" or "x").
func (eo *explainOptions) gather(ctx context.Context, kc kubernetes.Interface, pc pgclient.Interface, qc qclient.Interface, ns, arg string) (ExplainInput, error) {
	in := ExplainInput{DefaultQueue: eo.defaultQueue}
	kind, name, found := strings.Cut(arg, "/")
	if !found {
		kind, name = "", arg
	}
	kind = strings.ToLower(kind)
	switch kind {
	case "", "podgroup", "podgroups", "pg":
		pg, err := pc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			in.PodGroup = pg
		case !apierrors.IsNotFound(err) || kind != "":
			return in, fmt.Errorf("getting PodGroup %s/%s: %w", ns, name, err)
		}
	case "pod", "pods", "po":
	default:
		return in, fmt.Errorf("cannot explain %q: name a pod (pod/NAME) or a PodGroup (podgroup/NAME)", arg)
	}
	if in.PodGroup == nil {
		pod, err := kc.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return in, fmt.Errorf("getting pod %s/%s: %w", ns, name, err)
		}
		if g := groupOf(pod); g != "" {
			// A member is explained through its gang: the gang is what
			// the scheduler admits and places as one.
			pg, err := pc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, g, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return in, fmt.Errorf("getting PodGroup %s/%s: %w", ns, g, err)
			}
			if err == nil {
				in.PodGroup = pg
			}
		}
		if in.PodGroup == nil {
			in.Pods = []corev1.Pod{*pod}
		}
	}
	if in.PodGroup != nil {
		// Members by label or by the gang annotation (whose group name is
		// derived from the owner, so no selector finds them).
		pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return in, fmt.Errorf("listing the members of %s/%s: %w", ns, in.PodGroup.Name, err)
		}
		for i := range pods.Items {
			if groupOf(&pods.Items[i]) == in.PodGroup.Name {
				in.Pods = append(in.Pods, pods.Items[i])
			}
		}
	}
	if n, err := kc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		in.NamespaceQueue = n.Labels[qapi.QueueLabel]
	} // else: a user who may not read namespaces sees the default queue
	queues, err := qc.SchedulingV1alpha1().Queues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("listing Queues: %w", err)
	}
	in.Queues = queues.Items
	events, err := kc.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("listing Events: %w", err)
	}
	uids := map[string]bool{}
	if in.PodGroup != nil {
		uids[string(in.PodGroup.UID)] = true
	}
	for _, p := range in.Pods {
		uids[string(p.UID)] = true
	}
	for _, e := range events.Items {
		if uids[string(e.Regarding.UID)] {
			in.Events = append(in.Events, e)
		}
	}
	return in, nil
}

// groupOf is the PodGroup a pod belongs to, as the scheduler decides it:
// the pod-group label, else the gang it asks for by annotation; "" for none.
func groupOf(pod *corev1.Pod) string {
	if g := pod.Labels[v1alpha1.PodGroupLabel]; g != "" {
		return g
	}
	g, _ := annotation.GroupOf(pod)
	return g
}

// Explanation is explain's answer.
type Explanation struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Queue     string `json:"queue"`
	// Position is the job's place in its queue's admission order (1 is
	// next) from the head the scheduler publishes; 0 when not there.
	Position  int   `json:"position,omitempty"`
	MinMember int32 `json:"minMember"`
	Members   int   `json:"members"`
	Bound     int   `json:"bound"`
	// Stage is where the scheduler holds the job: Running, Finished,
	// WaitingForMembers, WaitingForPodGroup, WaitingForAdmission,
	// Unschedulable (no node fits), Scheduling (admitted, not yet bound),
	// or Unknown.
	Stage string `json:"stage"`
	// Verdict is the scheduler's own word: the PodGroup's verdict
	// annotation, else a waiting member's PodScheduled=False message.
	Verdict string `json:"verdict,omitempty"`
	// ExpectedStart is when a waiting gang's reservation starts (RFC
	// 3339, a bound given the run-time limits it waits for);
	// EstimatedStart, without one, when it is expected to start if the
	// pods it waits for, which declare no limit, end as their queues'
	// recent pods did.
	ExpectedStart  string `json:"expectedStart,omitempty"`
	EstimatedStart string `json:"estimatedStart,omitempty"`
	// Needs is what the job still asks of its queue to start: the requests
	// of its unbound members up to minMember (or minResources, when
	// larger).
	Needs map[string]string `json:"needs,omitempty"`
	// Checks are the queue checks along the queue's path, leaf first.
	Checks []Check `json:"checks,omitempty"`
	// Changes are what would let the job go on.
	Changes []string `json:"changes,omitempty"`
	// Events are the newest Events about the job, newest last.
	Events []string `json:"events,omitempty"`
}

// Check is one queue check on one resource, with its numbers.
type Check struct {
	Queue    string `json:"queue"`
	Check    string `json:"check"` // capability or deserved
	Resource string `json:"resource"`
	Limit    string `json:"limit"`
	// Allocated is what the queue's status says it holds.
	Allocated string `json:"allocated"`
	Remaining string `json:"remaining"`
	Needs     string `json:"needs"`
	OK        bool   `json:"ok"`
	// Never: the job needs more than the limit itself, so no amount of
	// waiting lets it pass.
	Never bool `json:"never,omitempty"`
}

// maxEvents bounds the Events shown: the newest say what the scheduler
// thinks now.
const maxEvents = 5

// Explain builds the explanation from what the cluster holds. The queue
// checks use the Queue status the scheduler last wrote; they tell which
// limit a job is at, and by how much, in the same terms as the scheduler's
// verdict, which stays the authority (it is computed from live numbers).
func Explain(in ExplainInput, now time.Time) Explanation {
	var e Explanation
	unbound, podQueue := countMembers(&e, in.Pods)
	held := firstHeld(unbound)
	needs := corev1.ResourceList{}
	if pg := in.PodGroup; pg != nil {
		explainGang(&e, in, pg, unbound, podQueue, held, needs)
	} else if len(in.Pods) == 1 {
		explainPod(&e, in, &in.Pods[0], needs)
	}
	if len(needs) > 0 && e.Stage != "Running" && e.Stage != "Finished" {
		e.Needs = quantities(needs)
		e.Checks = queueChecks(in.Queues, e.Queue, needs)
	}
	if e.Kind != "" {
		rows := []JobRow{{Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}}
		SetPositions(rows, in.Queues)
		e.Position = rows[0].Position
	}
	e.Changes = changes(e)
	e.Events = newestEvents(in.Events, maxEvents)
	return e
}

// countMembers counts the job's live pods (finished ones no longer count)
// into e.Members and e.Bound, and returns the unbound ones and the first
// queue label a live pod carries.
func countMembers(e *Explanation, pods []corev1.Pod) (unbound []corev1.Pod, podQueue string) {
	unbound = []corev1.Pod{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		e.Members++
		if p.Spec.NodeName != "" {
			e.Bound++
		} else {
			unbound = append(unbound, p)
		}
		if podQueue == "" {
			podQueue = p.Labels[qapi.QueueLabel]
		}
	}
	return unbound, podQueue
}

// firstHeld is the first PodScheduled=False condition among unbound, as
// heldBy renders it; "" when none is held.
func firstHeld(unbound []corev1.Pod) string {
	for i := range unbound {
		if h := heldBy(&unbound[i]); h != "" {
			return h
		}
	}
	return ""
}

// explainGang fills in e for the gang pg: its identity, queue and stage,
// and adds to needs what it still asks of its queue to reach minMember.
// It sorts unbound.
func explainGang(e *Explanation, in ExplainInput, pg *v1alpha1.PodGroup, unbound []corev1.Pod, podQueue, held string, needs corev1.ResourceList) {
	e.Kind, e.Namespace, e.Name = "PodGroup", pg.Namespace, pg.Name
	e.MinMember = pg.Spec.MinMember
	e.Queue = firstNonEmpty(pg.Labels[qapi.QueueLabel], podQueue, in.NamespaceQueue, in.DefaultQueue)
	missing := int(pg.Spec.MinMember) - e.Bound
	addGangNeeds(needs, pg, missing, e.Bound, unbound)
	e.Stage, e.Verdict = gangStage(pg, missing, e.Members, held)
	if missing > 0 {
		e.ExpectedStart = pg.Annotations[qapi.ExpectedStartAnnotation]
		if e.ExpectedStart == "" {
			e.EstimatedStart = pg.Annotations[qapi.EstimatedStartAnnotation]
		}
	}
}

// addGangNeeds adds to needs the requests of the missing smallest unbound
// members and, while none is bound, raises it to the gang's minResources.
func addGangNeeds(needs corev1.ResourceList, pg *v1alpha1.PodGroup, missing, bound int, unbound []corev1.Pod) {
	// The smallest unbound members first: what the gang needs at
	// least to reach minMember.
	slices.SortFunc(unbound, func(a, b corev1.Pod) int { return compareCPU(podRequest(&a), podRequest(&b)) })
	for i := 0; i < missing && i < len(unbound); i++ {
		addList(needs, podRequest(&unbound[i]))
	}
	if pg.Spec.MinResources != nil && bound == 0 {
		for k, v := range pg.Spec.MinResources {
			if cur, ok := needs[k]; !ok || v.Cmp(cur) > 0 {
				needs[k] = v.DeepCopy()
			}
		}
	}
}

// gangStage is the stage the scheduler holds the gang at, and its verdict:
// the PodGroup's phase when it is over, else from its members, its
// verdict and admission annotations, and held (a waiting member's
// condition).
func gangStage(pg *v1alpha1.PodGroup, missing, members int, held string) (stage, verdict string) {
	switch {
	case pg.Status.Phase == v1alpha1.PodGroupFinished || pg.Status.Phase == v1alpha1.PodGroupFailed:
		return string(pg.Status.Phase), ""
	case missing <= 0:
		return "Running", ""
	case members < int(pg.Spec.MinMember):
		return "WaitingForMembers", held
	case pg.Annotations[qapi.VerdictAnnotation] != "" && pg.Annotations[qapi.AdmittedAtAnnotation] != "":
		// Admitted: the verdict says why the nodes do not take it.
		return "Unschedulable", pg.Annotations[qapi.VerdictAnnotation]
	case pg.Annotations[qapi.VerdictAnnotation] != "":
		return "WaitingForAdmission", pg.Annotations[qapi.VerdictAnnotation]
	default:
		return stageOfHeld(held, pg.Annotations[qapi.AdmittedAtAnnotation] != "")
	}
}

// explainPod fills in e for a pod outside any gang: its identity, queue
// and stage, and adds its request to needs while it waits.
func explainPod(e *Explanation, in ExplainInput, p *corev1.Pod, needs corev1.ResourceList) {
	e.Kind, e.Namespace, e.Name = "Pod", p.Namespace, p.Name
	e.MinMember = 1
	e.Queue = firstNonEmpty(p.Labels[qapi.QueueLabel], in.NamespaceQueue, in.DefaultQueue)
	switch {
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		e.Stage = "Finished"
	case p.Spec.NodeName != "":
		e.Stage = "Running"
	default:
		addList(needs, podRequest(p))
		e.Stage, e.Verdict = stageOfHeld(heldBy(p), false)
	}
}

// stageOfHeld reads the stage from a waiting pod's PodScheduled=False
// condition ("Reason: message").
func stageOfHeld(held string, admitted bool) (string, string) {
	reason, msg, _ := strings.Cut(held, ": ")
	switch {
	case held == "" && admitted:
		return "Scheduling", ""
	case held == "":
		return "Unknown", ""
	case reason == corev1.PodReasonUnschedulable:
		return "Unschedulable", msg
	}
	return reason, msg
}

// queueChecks compares needs with each queue's remaining capability and
// remaining deserved share, from the leaf up.
func queueChecks(queues []qapi.Queue, leaf string, needs corev1.ResourceList) []Check {
	byName := map[string]*qapi.Queue{}
	for i := range queues {
		byName[queues[i].Name] = &queues[i]
	}
	var out []Check
	seen := map[string]bool{}
	for name := leaf; name != "" && !seen[name]; {
		seen[name] = true
		q := byName[name]
		if q == nil {
			break
		}
		names := make([]string, 0, len(needs))
		for k := range needs {
			names = append(names, string(k))
		}
		slices.Sort(names)
		for _, r := range names {
			need := needs[corev1.ResourceName(r)]
			alloc := q.Status.Allocated[corev1.ResourceName(r)]
			for _, lim := range []struct {
				check string
				list  corev1.ResourceList
			}{{"capability", q.Spec.Capability}, {"deserved", q.Status.Deserved}} {
				limit, ok := lim.list[corev1.ResourceName(r)]
				if !ok {
					continue
				}
				rem := limit.DeepCopy()
				rem.Sub(alloc)
				out = append(out, Check{Queue: name, Check: lim.check, Resource: r,
					Limit: limit.String(), Allocated: alloc.String(), Remaining: rem.String(),
					Needs: need.String(), OK: need.Cmp(rem) <= 0, Never: need.Cmp(limit) > 0})
			}
		}
		name = q.Spec.Parent
	}
	return out
}

// changes says what would let the job go on, from its stage and checks.
func changes(e Explanation) []string {
	var out []string
	switch e.Stage {
	case "WaitingForMembers":
		out = append(out, fmt.Sprintf("create the gang's missing members: %d of minMember %d exist", e.Members, e.MinMember))
	case "WaitingForPodGroup":
		out = append(out, "create the PodGroup the pods name, or remove their pod-group label")
	case "Unschedulable":
		out = append(out, "no node fits a member now: free or add nodes that pass the reasons in the verdict, or relax the pods' node selectors, affinity or requests")
	case "Scheduling":
		out = append(out, "admitted: the members are being placed; nothing to do unless this lasts")
	}
	for _, c := range e.Checks {
		if c.OK {
			continue
		}
		switch {
		case c.Check == "capability" && c.Never:
			out = append(out, fmt.Sprintf("the job needs more %s than queue %s's capability (limit %s, needs %s): it can never start there; raise the capability or make the job smaller", c.Resource, c.Queue, c.Limit, c.Needs))
		case c.Check == "capability":
			out = append(out, fmt.Sprintf("queue %s is at its capability on %s (limit %s, allocated %s, needs %s): raise the capability, or wait for its jobs to finish", c.Queue, c.Resource, c.Limit, c.Allocated, c.Needs))
		case c.Check == "deserved":
			out = append(out, fmt.Sprintf("queue %s would go over its deserved share of %s (deserved %s, allocated %s, needs %s): this holds it only while other queues have demand for the rest; it is admitted when their demand drops or the cluster grows, and a higher weight raises its share", c.Queue, c.Resource, c.Limit, c.Allocated, c.Needs))
		}
	}
	if e.Stage == "WaitingForAdmission" && len(out) == 0 {
		out = append(out, "the queue checks pass on the last written status: the verdict names the check (cluster room, members not placeable on the free nodes, a ResourceQuota, or room reserved for another gang); free or add room, or wait")
	}
	return out
}

// newestEvents renders the newest n Events, oldest first.
func newestEvents(events []eventsv1.Event, n int) []string {
	type ev struct {
		at   time.Time
		text string
	}
	var all []ev
	for i := range events {
		e := &events[i]
		at := e.EventTime.Time
		if e.Series != nil && e.Series.LastObservedTime.After(at) {
			at = e.Series.LastObservedTime.Time
		}
		if e.DeprecatedLastTimestamp.After(at) {
			at = e.DeprecatedLastTimestamp.Time
		}
		if at.IsZero() {
			at = e.CreationTimestamp.Time
		}
		all = append(all, ev{at, fmt.Sprintf("%s %s/%s %s: %s", e.Type, e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)})
	}
	slices.SortStableFunc(all, func(a, b ev) int { return a.at.Compare(b.at) })
	if len(all) > n {
		all = all[len(all)-n:]
	}
	out := make([]string, len(all))
	for i, e := range all {
		out[i] = e.text
	}
	return out
}

// podRequest is what a pod asks for: its containers' requests summed, or
// an init container's when larger, plus its overhead (the scheduler's rule).
func podRequest(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		addList(out, c.Resources.Requests)
	}
	for _, c := range p.Spec.InitContainers {
		for k, v := range c.Resources.Requests {
			if cur, ok := out[k]; !ok || v.Cmp(cur) > 0 {
				out[k] = v.DeepCopy()
			}
		}
	}
	addList(out, p.Spec.Overhead)
	return out
}

func addList(dst, src corev1.ResourceList) {
	for k, v := range src {
		cur := dst[k]
		cur.Add(v)
		dst[k] = cur
	}
}

func compareCPU(a, b corev1.ResourceList) int {
	x, y := a[corev1.ResourceCPU], b[corev1.ResourceCPU]
	return x.Cmp(y)
}

func printExplanation(w io.Writer, e Explanation, format string) error {
	if done, err := printStructured(w, e, format); done {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s %s/%s\tqueue %s\tstage %s\n", e.Kind, e.Namespace, e.Name, e.Queue, e.Stage)
	fmt.Fprintf(tw, "members\t%d (bound %d, minMember %d)\n", e.Members, e.Bound, e.MinMember)
	if e.Position > 0 {
		fmt.Fprintf(tw, "position\t%d in queue %s (1 is admitted next)\n", e.Position, e.Queue)
	}
	if e.Verdict != "" {
		fmt.Fprintf(tw, "verdict\t%s\n", e.Verdict)
	}
	switch {
	case e.ExpectedStart != "":
		fmt.Fprintf(tw, "starts\tby %s (reserved; the jobs it waits for declare run-time limits)\n", e.ExpectedStart)
	case e.EstimatedStart != "":
		fmt.Fprintf(tw, "starts\tabout %s (an estimate: jobs it waits for declare no run-time limit)\n", e.EstimatedStart)
	}
	if len(e.Needs) > 0 {
		fmt.Fprintf(tw, "needs\t%s\n", resources(e.Needs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(e.Checks) > 0 {
		fmt.Fprintln(w, "\nQueue checks (from the status the scheduler last wrote):")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "QUEUE\tCHECK\tRESOURCE\tLIMIT\tALLOCATED\tREMAINING\tNEEDS\tOK")
		for _, c := range e.Checks {
			ok := "yes"
			if !c.OK {
				ok = "NO"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Queue, c.Check, c.Resource, c.Limit, c.Allocated, c.Remaining, c.Needs, ok)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(e.Changes) > 0 {
		fmt.Fprintln(w, "\nWhat would change it:")
		for _, c := range e.Changes {
			fmt.Fprintf(w, "  - %s\n", c)
		}
	}
	if len(e.Events) > 0 {
		fmt.Fprintln(w, "\nEvents (newest last):")
		for _, ev := range e.Events {
			fmt.Fprintf(w, "  %s\n", ev)
		}
	}
	return nil
}
