package kubectlcaldera

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/feed"
	calderares "github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// ErrWouldNotStart is what-if's answer "no": the report is printed, and
// the command exits 1 without another message.
var ErrWouldNotStart = errors.New("the job would not be admitted now")

// whatIfOptions are the what-if command's own flags.
type whatIfOptions struct {
	file, namespace, config string
	explain                 bool
}

func newWhatIfCommand(o *options) *cobra.Command {
	wo := &whatIfOptions{}
	cmd := &cobra.Command{
		Use:   "what-if -f JOB.yaml",
		Short: "Would this job be admitted now, and at which position: Caldera's own admission pass on a copy of the cluster",
		Long: `what-if answers whether a job would be admitted to its queue if it were
submitted now. It lists the cluster (pods, nodes, namespaces, PodGroups,
Queues, Jobs and, when the scheduler checks them, ResourceQuotas), adds the job's
objects as the API server would hold them (a Job becomes the pods its
controller creates first; a gang asked for by annotation gets the PodGroup
the scheduler would create), and runs the scheduler's own cache and one
admission pass on that copy, in this process. The reservations the live
scheduler published (PodGroups' expected starts) are planned first, by
start, as its next pass plans the ones it keeps: the job may take their
room only if it ends before they start. Nothing is written to the
cluster. The job file holds Pods, Jobs and PodGroups (scheduling.x-k8s.io).

--config reads the scheduler's KubeSchedulerConfiguration for the profiles
and plugin args it runs with; without it the shipped configuration's
profiles and the default args are assumed.

Exit code 0 when every gated unit of the job would be admitted, 1 when one
would wait (or on an error).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			if wo.file == "" {
				return errors.New("what-if needs the job: -f JOB.yaml")
			}
			cs, ns, err := o.allClients()
			if err != nil {
				return err
			}
			if wo.namespace != "" {
				ns = wo.namespace
			}
			r, err := WhatIf(cmd.Context(), cs, ns, *wo)
			if err != nil {
				return err
			}
			if err := printWhatIf(cmd.OutOrStdout(), r, o.output, wo.explain); err != nil {
				return err
			}
			if !r.Starts {
				return ErrWouldNotStart
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&wo.file, "filename", "f", "", "the job: a YAML or JSON file of Pods, Jobs and PodGroups (- for stdin)")
	fs.StringVarP(&wo.namespace, "namespace", "n", "", "the namespace of objects that name none (default: the kubeconfig context's)")
	fs.StringVar(&wo.config, "config", "", "the scheduler's KubeSchedulerConfiguration file (default: the shipped profiles, default args)")
	fs.BoolVar(&wo.explain, "explain", false, "show the path through the admission checks and the queue numbers behind them")
	return cmd
}

// WhatIfResult is what-if's answer for one job.
type WhatIfResult struct {
	// Starts: every unit that needs admission would be admitted now.
	Starts bool         `json:"starts"`
	Units  []WhatIfUnit `json:"units"`
	// Queues are the queues the units wait in and their ancestors, after
	// the pass (what the scheduler would write in their status).
	Queues []admission.QueueDump `json:"queues,omitempty"`
	// Ignored are the file's objects that schedule nothing themselves
	// (Kind/name): Services, ConfigMaps, other operators' resources.
	Ignored []string `json:"ignored,omitempty"`
	// Reservations are the live plan's reservations the pass was held
	// to, and those it left out.
	Reservations []LiveReservation `json:"reservations,omitempty"`
}

// WhatIfUnit is one unit of the job: a gang, or a pod outside any gang.
type WhatIfUnit struct {
	admission.UnitView
	// Pods are the unit's pods in the job.
	Pods []string `json:"pods"`
	// Position is the unit's place in its queue's admission order before
	// the pass (1 is examined first); 0 when it is not in that order (a
	// gang short of members, or a request no limit can ever fit).
	Position int `json:"position,omitempty"`
	// Waiting is how many units wait in the queue in all.
	Waiting int `json:"waiting,omitempty"`
	// Plan is the eviction plan the unit needs, when it was admitted on
	// room only evictions free.
	Plan *PlanView `json:"plan,omitempty"`
	// Path is the admission checks in the order the pass runs them, each
	// passed or failed (--explain).
	Path []PathStep `json:"path,omitempty"`
}

// PathStep is one admission check on a unit's path.
type PathStep struct {
	Check  string `json:"check"`
	Result string `json:"result"`
}

// admissionChecks are the pass's checks in order (pkg/queue's Check),
// named as UnitView.Check names them.
var admissionChecks = []string{"Members", "Queue", "Capability", "Fairness", "Cluster", "ResourceQuota", "Placement", "Reservation", "Reserved"}

// WhatIf runs what-if for the job in wo.file against the cluster cs reads.
func WhatIf(ctx context.Context, cs clientSet, ns string, wo whatIfOptions) (WhatIfResult, error) {
	var res WhatIfResult
	settings, err := loadSettings(wo.config)
	if err != nil {
		return res, err
	}
	in := io.Reader(os.Stdin)
	if wo.file != "-" {
		f, err := os.Open(wo.file)
		if err != nil {
			return res, err
		}
		defer f.Close()
		in = f
	}
	now := time.Now()
	job, err := readJob(in, ns, now)
	if err != nil {
		return res, err
	}
	l, err := listCluster(ctx, cs, settings.admission.CheckResourceQuota)
	if err != nil {
		return res, err
	}
	if err := addJob(l, job); err != nil {
		return res, err
	}
	return predict(ctx, l, job, settings, now)
}

// predict runs the cache on l, the listed cluster with the job's objects,
// fed directly (no API server), and one admission pass at now, and reads
// what the pass decided for job.
func predict(ctx context.Context, l *feed.Listed, job jobObjects, s schedulerSettings, now time.Time) (WhatIfResult, error) {
	var res WhatIfResult
	// The cache logs as the scheduler does; a command's output is its report.
	ctx = klog.NewContext(ctx, klog.LoggerWithName(klog.Background(), "what-if").V(10))
	logger := klog.FromContext(ctx)
	c, err := startWhatIfCache(ctx, l, s)
	if err != nil {
		return res, err
	}
	if err := addAnnotatedGangs(logger, c, l, now); err != nil {
		return res, err
	}
	// The live scheduler's pass plans the reservations it kept first; a
	// fresh cache kept none, so it is given those the scheduler published.
	seeds, live := liveReservations(l, job)
	skipped := c.SeedReservations(seeds)
	before := dumpOf(c)
	c.AdmissionPass(logger, now)
	after := dumpOf(c)
	settleLive(live, skipped, c.Reservations())
	res, err = readUnits(c, before, after, l, job, s, now)
	res.Reservations = live
	return res, err
}

// startWhatIfCache builds the scheduler's cache, with the scheduler's
// settings, and feeds it l.
func startWhatIfCache(ctx context.Context, l *feed.Listed, s schedulerSettings) (*cache.Cache, error) {
	const profile = "what-if"
	p := cache.NewProvider(status.AlwaysLeading())
	if _, err := p.Get(ctx, feed.DetachedHandle(profile)); err != nil {
		return nil, err
	}
	// What the scheduler's plugins would hand the Provider from their args.
	for _, prof := range s.profiles {
		if err := p.EnableAdmission(prof, s.admission); err != nil {
			return nil, err
		}
	}
	if err := p.EnableEvictions(profile, s.reclaim, s.preempt); err != nil {
		return nil, err
	}
	c, err := feed.Deliver(klog.FromContext(ctx), p, l)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's copy: %w", err)
	}
	return c, nil
}

// addAnnotatedGangs handles gangs asked for by annotation: it adds the
// PodGroups the leader would create, as the cache itself hands them out,
// to l and the cache, so that the pass sees those gangs as it would once
// the leader created them.
func addAnnotatedGangs(logger klog.Logger, c *cache.Cache, l *feed.Listed, now time.Time) error {
	create := c.PodGroupsToCreate()
	if len(create) == 0 {
		return nil
	}
	var pgs []*v1alpha1.PodGroup
	for _, pc := range create {
		pg := annotation.NewPodGroup(pc)
		pg.UID = types.UID("what-if-PodGroup-" + pg.Namespace + "-" + pg.Name)
		pg.CreationTimestamp = metav1.NewTime(now)
		pgs = append(pgs, pg)
	}
	if err := addPodGroups(l, pgs); err != nil {
		return err
	}
	for _, pg := range pgs {
		c.SetGroup(logger, schedplugins.Spec(pg))
	}
	return nil
}

// readUnits reads what the pass decided for each of job's pods, grouped
// into units, from c and the dumps taken before and after it. On error it
// returns the units read so far.
func readUnits(c *cache.Cache, before, after *cache.CacheDump, l *feed.Listed, job jobObjects, s schedulerSettings, now time.Time) (WhatIfResult, error) {
	res := WhatIfResult{Starts: true}
	byUnit := map[string]int{}
	queues := map[string]bool{}
	for _, p := range job.pods {
		v, ok := c.AdmissionOf(p)
		if !ok {
			return res, fmt.Errorf("the scheduler's cache does not know pod %s/%s", p.Namespace, p.Name)
		}
		key := v.Unit
		if key == "" {
			key = "pod:" + p.Namespace + "/" + p.Name
		}
		if i, seen := byUnit[key]; seen {
			res.Units[i].Pods = append(res.Units[i].Pods, p.Name)
			continue
		}
		u, starts := newUnit(c, p, v, before, l, s, now)
		if !starts {
			res.Starts = false
		}
		if v.Queue != "" {
			queues[v.Queue] = true
		}
		byUnit[key] = len(res.Units)
		res.Units = append(res.Units, u)
	}
	res.Queues = queuePath(after, queues)
	res.Ignored = job.ignored
	return res, nil
}

// newUnit is the unit whose first pod in the job is p, and whether it
// would start: not when it stays gated, nor when admission counted room no
// eviction plan can free.
func newUnit(c *cache.Cache, p *corev1.Pod, v admission.UnitView, before *cache.CacheDump, l *feed.Listed, s schedulerSettings, now time.Time) (WhatIfUnit, bool) {
	starts := true
	u := WhatIfUnit{UnitView: v, Pods: []string{p.Name}}
	u.Position, u.Waiting = position(before, v.Queue, v.Unit)
	u.Path = path(v)
	if v.Admitted && v.OnPlan {
		plan := evictionPlan(c, p, l.Pods, l.Nodes, s, now)
		u.Plan = &plan
		// Admission counted room no eviction can free now (say, a
		// victim gang that would break): the job would wait.
		if plan.Action == "" {
			starts = false
		}
	}
	if v.Gated && !v.Admitted {
		starts = false
	}
	return u, starts
}

// dumpOf is the cache's dump, decoded.
func dumpOf(c *cache.Cache) *cache.CacheDump {
	d := &cache.CacheDump{}
	if data, err := c.Dump(); err == nil {
		_ = json.Unmarshal(data, d)
	}
	return d
}

// position is unit's 1-based place in queue's admission order in d, and
// the length of that order.
func position(d *cache.CacheDump, queue, unit string) (int, int) {
	for _, q := range d.Queues {
		if q.Name == queue {
			return slices.Index(q.Order, unit) + 1, len(q.Order)
		}
	}
	return 0, 0
}

// path is the checks v passed and the one it failed, in the pass's order.
func path(v admission.UnitView) []PathStep {
	if !v.Gated {
		return nil
	}
	failed := v.Check
	switch failed {
	case "QueueMissing", "QueueBroken", "QueueClosed":
		failed = "Queue"
	case "Waiting":
		failed = "Reserved"
	}
	var steps []PathStep
	for _, c := range admissionChecks {
		switch {
		case v.Admitted && c == "Placement" && v.OnPlan:
			steps = append(steps, PathStep{c, "passed with the room a reclaim or preemption plan frees"})
		case v.Admitted || (failed != "" && c != failed):
			steps = append(steps, PathStep{c, "passed"})
		case c == failed:
			steps = append(steps, PathStep{c, "FAILED: " + v.Message})
			return steps
		default:
			steps = append(steps, PathStep{c, "not reached: " + v.Message})
			return steps
		}
	}
	return steps
}

// queuePath is the named queues and their ancestors, in d's order.
func queuePath(d *cache.CacheDump, named map[string]bool) []admission.QueueDump {
	parent := map[string]string{}
	for _, q := range d.Queues {
		parent[q.Name] = q.Parent
	}
	want := map[string]bool{}
	for q := range named {
		for n := q; n != "" && !want[n]; n = parent[n] {
			want[n] = true
		}
	}
	var out []admission.QueueDump
	for _, q := range d.Queues {
		if want[q.Name] {
			q.Order = nil
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b admission.QueueDump) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func printWhatIf(w io.Writer, r WhatIfResult, format string, explain bool) error {
	if done, err := printStructured(w, r, format); done {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tQUEUE\tPODS\tPOSITION\tADMITTED\tVERDICT")
	for _, u := range r.Units {
		pos := "-"
		if u.Position > 0 {
			pos = fmt.Sprintf("%d/%d", u.Position, u.Waiting)
		}
		admitted := "no"
		switch {
		case !u.Gated:
			admitted = "not gated"
		case u.Admitted && u.OnPlan && u.Plan != nil && u.Plan.Action == "":
			admitted = "yes, but no plan frees the room"
		case u.Admitted && u.OnPlan:
			admitted = "yes, on a plan"
		case u.Admitted:
			admitted = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", u.Unit, u.Queue, len(u.Pods), pos, admitted, u.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Ignored) > 0 {
		fmt.Fprintf(w, "\nNot scheduled themselves, left out: %s\n", strings.Join(r.Ignored, ", "))
	}
	if err := printLive(w, r.Reservations); err != nil {
		return err
	}
	printPlans(w, r.Units)
	if !explain {
		return nil
	}
	for _, u := range r.Units {
		if len(u.Path) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s needs %s; its path through the checks:\n", u.Unit, listString(u.Request))
		for _, s := range u.Path {
			fmt.Fprintf(w, "  %-14s %s\n", s.Check, s.Result)
		}
	}
	if len(r.Queues) > 0 {
		fmt.Fprintln(w, "\nQueues after the pass:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "QUEUE\tPARENT\tCAPABILITY\tDESERVED\tALLOCATED\tINFLIGHT\tSHARE")
		for _, q := range r.Queues {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.2f\n", q.Name, orDash(q.Parent), listString(q.Capability),
				listString(q.Deserved), listString(q.Allocated), listString(q.Inflight), q.Share)
		}
		return tw.Flush()
	}
	return nil
}

// printPlans shows the eviction plan each unit admitted on one needs.
func printPlans(w io.Writer, units []WhatIfUnit) {
	for _, u := range units {
		switch {
		case u.Plan == nil:
		case u.Plan.Action == "":
			fmt.Fprintf(w, "\n%s: no eviction plan can be made now: %s\n", u.Unit, u.Plan.Why)
		default:
			fmt.Fprintf(w, "\n%s needs a %s plan: evicts %d pods (%s); members go to %s\n", u.Unit, u.Plan.Action,
				len(u.Plan.Victims), strings.Join(u.Plan.Victims, ", "), strings.Join(u.Plan.Nodes, ", "))
		}
	}
}

// listString renders a resource list in the cache's units as users read it.
func listString(l calderares.List) string {
	if len(l) == 0 {
		return "-"
	}
	return l.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
