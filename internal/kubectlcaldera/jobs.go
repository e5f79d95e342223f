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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
)

// jobsOptions are the jobs command's own flags.
type jobsOptions struct {
	namespace     string
	allNamespaces bool
	queue         string
	schedulers    []string
	defaultQueue  string
}

func newJobsCommand(o *options) *cobra.Command {
	jo := &jobsOptions{}
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Gangs and singleton pods with their queue, phase and last verdict",
		Long: `jobs lists the gangs (PodGroups) and the singleton pods Caldera schedules:
their queue, phase, members bound out of minMember, whether the scheduler
admitted them to their queue, how long they have waited, and the last word
the scheduler said about them (the newest Event on the PodGroup or pod, e.g.
"NotAdmitted: queue team-a: cpu request 4 exceeds remaining capability 2").
Singletons are pods without a PodGroup whose schedulerName is one of
--scheduler-name; finished pods are left out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			cs, ns, err := o.allClients()
			if err != nil {
				return err
			}
			if jo.namespace != "" {
				ns = jo.namespace
			}
			if jo.allNamespaces {
				ns = metav1.NamespaceAll
			}
			rows, err := jo.list(cmd.Context(), cs.kube, cs.podGroup, cs.queue, ns, time.Now())
			if err != nil {
				return err
			}
			return printJobs(cmd.OutOrStdout(), rows, o.output)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&jo.namespace, "namespace", "n", "", "the namespace (default: the kubeconfig context's)")
	fs.BoolVarP(&jo.allNamespaces, "all-namespaces", "A", false, "every namespace")
	fs.StringVarP(&jo.queue, "queue", "q", "", "only the jobs of this queue")
	fs.StringSliceVar(&jo.schedulers, "scheduler-name", []string{"caldera-scheduler", "caldera-scheduler-spread"}, "the schedulerNames of Caldera's profiles, for singleton pods")
	fs.StringVar(&jo.defaultQueue, "default-queue", "default", "the queue of jobs that name none (CalderaEnqueue's defaultQueue)")
	return cmd
}

// JobRow is one gang or singleton as the jobs command shows it.
type JobRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Kind is PodGroup or Pod.
	Kind      string `json:"kind"`
	Queue     string `json:"queue"`
	Phase     string `json:"phase"`
	MinMember int32  `json:"minMember"`
	Members   int    `json:"members"`
	Bound     int    `json:"bound"`
	// AdmittedAt is when the scheduler admitted the gang to its queue (its
	// PodGroup's annotation), empty while it waits for admission.
	AdmittedAt string `json:"admittedAt,omitempty"`
	// Waiting is how long the job has existed without having started; empty
	// once it runs.
	Waiting string `json:"waiting,omitempty"`
	// Position is the job's place in its queue's admission order (1 is
	// next), from the head the scheduler publishes in the Queue's status;
	// 0 when it is not there (admitted, short of members, or further back
	// than the published head).
	Position int `json:"position,omitempty"`
	// ExpectedStart is when the job's reservation starts (its PodGroup's
	// expected-start annotation, RFC 3339), empty without one.
	ExpectedStart string `json:"expectedStart,omitempty"`
	// EstimatedStart is, for a job without a reservation because what it
	// waits for declares no run-time limit, when it is expected to start
	// (the PodGroup's estimated-start annotation): an estimate.
	EstimatedStart string `json:"estimatedStart,omitempty"`
	// ETA is ExpectedStart from now, as "in 2m" (or "now" once it is
	// due); else EstimatedStart, marked "~" ("~in 2m").
	ETA string `json:"eta,omitempty"`
	// Verdict is why the job waits, as "Reason: message": the PodGroup's
	// verdict annotation, else a waiting pod's PodScheduled=False
	// condition, else the newest Event.
	Verdict string `json:"verdict,omitempty"`
}

func (jo *jobsOptions) list(ctx context.Context, kc kubernetes.Interface, pc pgclient.Interface, qc qclient.Interface, ns string, now time.Time) ([]JobRow, error) {
	pgs, err := pc.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PodGroups: %w", err)
	}
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	events, err := kc.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Events: %w", err)
	}
	nsQueue := map[string]string{}
	if nss, err := kc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nss.Items {
			nsQueue[n.Name] = n.Labels[qapi.QueueLabel]
		}
	} // else: a user who may not list namespaces sees the default queue for them
	rows := JobRows(pgs.Items, pods.Items, events.Items, nsQueue, jo.schedulers, jo.defaultQueue, now)
	if qc != nil {
		// Positions are a nicety: a user who may not list Queues still
		// gets the rest.
		if queues, err := qc.SchedulingV1alpha1().Queues().List(ctx, metav1.ListOptions{}); err == nil {
			SetPositions(rows, queues.Items)
		}
	}
	if jo.queue != "" {
		rows = slices.DeleteFunc(rows, func(r JobRow) bool { return r.Queue != jo.queue })
	}
	return rows, nil
}

// podGroupOf names the PodGroup of pod's gang as the scheduler decides it
// (gangbook.GroupKeyOf): its pod-group label, else the PodGroup of its
// controller when it asks for a gang by annotation; "" for none.
func podGroupOf(p *corev1.Pod) string {
	if g := p.Labels[v1alpha1.PodGroupLabel]; g != "" {
		return g
	}
	g, _ := annotation.GroupOf(p)
	return g
}

// JobRows builds the jobs command's rows: one per PodGroup and one per
// unfinished singleton pod of schedulers, by namespace and name. The queue
// follows the scheduler's order: the PodGroup's label, else a member's,
// else the namespace's (nsQueue), else defaultQueue.
func JobRows(pgs []v1alpha1.PodGroup, pods []corev1.Pod, events []eventsv1.Event, nsQueue map[string]string, schedulers []string, defaultQueue string, now time.Time) []JobRow {
	latest := latestEvents(events)
	type members struct {
		n, bound int
		queue    string
		// held is a waiting member's PodScheduled=False condition.
		held string
	}
	byGroup := map[types.NamespacedName]*members{}
	var rows []JobRow
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if g := podGroupOf(p); g != "" {
			k := types.NamespacedName{Namespace: p.Namespace, Name: g}
			m := byGroup[k]
			if m == nil {
				m = &members{}
				byGroup[k] = m
			}
			m.n++
			if p.Spec.NodeName != "" {
				m.bound++
			}
			if m.queue == "" {
				m.queue = p.Labels[qapi.QueueLabel]
			}
			if m.held == "" {
				m.held = heldBy(p)
			}
			continue
		}
		if !slices.Contains(schedulers, p.Spec.SchedulerName) {
			continue
		}
		rows = append(rows, singletonRow(p, latest[p.UID], firstNonEmpty(p.Labels[qapi.QueueLabel], nsQueue[p.Namespace], defaultQueue), now))
	}
	for i := range pgs {
		pg := &pgs[i]
		m := byGroup[types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}]
		if m == nil {
			m = &members{}
		}
		phase := string(pg.Status.Phase)
		if phase == "" {
			phase = string(v1alpha1.PodGroupPending)
		}
		row := JobRow{Namespace: pg.Namespace, Name: pg.Name, Kind: "PodGroup",
			Queue:     firstNonEmpty(pg.Labels[qapi.QueueLabel], m.queue, nsQueue[pg.Namespace], defaultQueue),
			Phase:     phase,
			MinMember: pg.Spec.MinMember, Members: m.n, Bound: m.bound,
			AdmittedAt: pg.Annotations[qapi.AdmittedAtAnnotation],
			Verdict:    firstNonEmpty(notAdmitted(pg), m.held, latest[pg.UID]),
		}
		if m.bound < int(pg.Spec.MinMember) && phase != string(v1alpha1.PodGroupRunning) && phase != string(v1alpha1.PodGroupFinished) {
			row.Waiting = since(pg.CreationTimestamp.Time, now)
			row.ExpectedStart, row.EstimatedStart, row.ETA = starts(pg.Annotations, now)
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b JobRow) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return rows
}

// singletonRow is the row of a pod outside any gang, in queue, whose newest
// Event says event.
func singletonRow(p *corev1.Pod, event, queue string, now time.Time) JobRow {
	row := JobRow{Namespace: p.Namespace, Name: p.Name, Kind: "Pod", MinMember: 1, Members: 1,
		Queue: queue, Phase: string(p.Status.Phase), Verdict: firstNonEmpty(heldBy(p), event)}
	if p.Spec.NodeName != "" {
		row.Bound = 1
	} else {
		row.Waiting = since(p.CreationTimestamp.Time, now)
	}
	return row
}

// SetPositions fills each row's Position from its queue's published head
// (QueueStatus.Head).
func SetPositions(rows []JobRow, queues []qapi.Queue) {
	type at struct{ kind, ns, name string }
	pos := map[at]int{}
	for _, q := range queues {
		for i, g := range q.Status.Head {
			pos[at{g.Kind, g.Namespace, g.Name}] = i + 1
		}
	}
	for i := range rows {
		rows[i].Position = pos[at{rows[i].Kind, rows[i].Namespace, rows[i].Name}]
	}
}

// heldBy is an unbound pod's PodScheduled=False condition as "Reason:
// message" (the scheduler's verdict, which does not expire as Events do),
// else "".
func heldBy(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// notAdmitted is the verdict the scheduler keeps on a PodGroup, as
// "NotAdmitted: message" while its queue has not admitted it, or
// "Unschedulable: message" once admitted, else "".
func notAdmitted(pg *v1alpha1.PodGroup) string {
	v := pg.Annotations[qapi.VerdictAnnotation]
	switch {
	case v == "":
		return ""
	case pg.Annotations[qapi.AdmittedAtAnnotation] != "":
		return "Unschedulable: " + v
	}
	return "NotAdmitted: " + v
}

// latestEvents maps each object's UID to its newest Event, as "Reason:
// note".
func latestEvents(events []eventsv1.Event) map[types.UID]string {
	type seen struct {
		at   time.Time
		text string
	}
	out := map[types.UID]seen{}
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
		uid := e.Regarding.UID
		if cur, ok := out[uid]; ok && !at.After(cur.at) {
			continue
		}
		out[uid] = seen{at: at, text: e.Reason + ": " + e.Note}
	}
	texts := make(map[types.UID]string, len(out))
	for uid, s := range out {
		texts[uid] = s.text
	}
	return texts
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func since(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	return duration.HumanDuration(now.Sub(t))
}

// starts reads a waiting PodGroup's expected start (its reservation's)
// and, without one, its estimated start, and the ETA to show: "in 5m"
// from the first, "~in 5m" from the second.
func starts(ann map[string]string, now time.Time) (expected, estimated, in string) {
	if expected, in = eta(ann[qapi.ExpectedStartAnnotation], now); expected != "" {
		return expected, "", in
	}
	if estimated, in = eta(ann[qapi.EstimatedStartAnnotation], now); estimated != "" {
		in = "~" + in
	}
	return "", estimated, in
}

// eta reads an expected-start annotation: the value if it is a time, and
// how far from now ("in 5m", "now" once due); empty otherwise.
func eta(v string, now time.Time) (string, string) {
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return "", ""
	}
	if !at.After(now) {
		return v, "now"
	}
	return v, "in " + duration.HumanDuration(at.Sub(now))
}

func printJobs(w io.Writer, rows []JobRow, format string) error {
	if rows == nil {
		rows = []JobRow{}
	}
	if done, err := printStructured(w, rows, format); done {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tKIND\tQUEUE\tPOSITION\tPHASE\tBOUND/MIN\tMEMBERS\tADMITTED\tWAITING\tETA\tVERDICT")
	for _, r := range rows {
		// A singleton's admission is in its Events only.
		admitted := "-"
		if r.Kind == "PodGroup" {
			admitted = dash(r.AdmittedAt)
		}
		position := "-"
		if r.Position > 0 {
			position = fmt.Sprint(r.Position)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\t%s\t%s\n", r.Namespace, r.Name, r.Kind, r.Queue, position, r.Phase,
			r.Bound, r.MinMember, r.Members, admitted, dash(r.Waiting), dash(r.ETA), dash(r.Verdict))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
