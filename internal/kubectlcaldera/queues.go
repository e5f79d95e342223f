package kubectlcaldera

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

func newQueuesCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "queues",
		Short: "The queue tree with each queue's share and its groups",
		Long: `queues lists every Queue as a tree (children under their parent): its
weight, guarantee and capability (spec), and what the scheduler last wrote in
its status: deserved share, allocated, share (allocated / deserved, on the
dominant resource), and its groups pending, admitted and running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			c, err := o.clients()
			if err != nil {
				return err
			}
			list, err := c.SchedulingV1alpha1().Queues().List(cmd.Context(), metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("listing Queues: %w", err)
			}
			return printQueues(cmd.OutOrStdout(), QueueRows(list.Items), o.output)
		},
	}
}

// QueueRow is one queue as the queues command shows it.
type QueueRow struct {
	Name   string `json:"name"`
	Parent string `json:"parent,omitempty"`
	// Depth is the queue's level in the tree shown (0: top level).
	Depth int `json:"depth"`
	// ParentMissing: the named parent does not exist (or is in a cycle);
	// the queue is shown at the top level.
	ParentMissing bool              `json:"parentMissing,omitempty"`
	Weight        int32             `json:"weight"`
	State         string            `json:"state"`
	Guarantee     map[string]string `json:"guarantee,omitempty"`
	Capability    map[string]string `json:"capability,omitempty"`
	Deserved      map[string]string `json:"deserved,omitempty"`
	Allocated     map[string]string `json:"allocated,omitempty"`
	Share         string            `json:"share,omitempty"`
	Pending       int32             `json:"pending"`
	Admitted      int32             `json:"admitted"`
	Running       int32             `json:"running"`
}

// QueueRows orders queues as a tree: top-level queues by name, each followed
// by its children by name, depth first. A queue whose parent is missing, or
// that sits in a parent cycle, is shown at the top level and marked.
func QueueRows(queues []qapi.Queue) []QueueRow {
	byName := map[string]*qapi.Queue{}
	children := map[string][]string{}
	for i := range queues {
		q := &queues[i]
		byName[q.Name] = q
	}
	var roots []string
	for name, q := range byName {
		if p := q.Spec.Parent; p != "" && byName[p] != nil && p != name {
			children[p] = append(children[p], name)
		} else {
			roots = append(roots, name)
		}
	}
	var out []QueueRow
	seen := map[string]bool{}
	var walk func(name string, depth int)
	walk = func(name string, depth int) {
		if seen[name] {
			return
		}
		seen[name] = true
		q := byName[name]
		row := rowOf(q, depth)
		row.ParentMissing = depth == 0 && q.Spec.Parent != ""
		out = append(out, row)
		kids := children[name]
		slices.Sort(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	slices.Sort(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	// What no root reaches is a parent cycle: shown at the top level.
	var rest []string
	for name := range byName {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, r := range rest {
		walk(r, 0)
	}
	return out
}

func rowOf(q *qapi.Queue, depth int) QueueRow {
	state := string(q.Spec.State)
	if state == "" {
		state = string(qapi.QueueStateOpen)
	}
	return QueueRow{
		Name: q.Name, Parent: q.Spec.Parent, Depth: depth,
		Weight: q.Spec.Weight, State: state,
		Guarantee: quantities(q.Spec.Guarantee), Capability: quantities(q.Spec.Capability),
		Deserved: quantities(q.Status.Deserved), Allocated: quantities(q.Status.Allocated),
		Share: q.Status.Share, Pending: q.Status.Pending, Admitted: q.Status.Admitted, Running: q.Status.Running,
	}
}

func quantities(l corev1.ResourceList) map[string]string {
	if len(l) == 0 {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

// resources renders a resource map as "cpu=4,memory=8Gi", names sorted; "-"
// when empty.
func resources(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func printQueues(w io.Writer, rows []QueueRow, format string) error {
	if done, err := printStructured(w, rows, format); done {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWEIGHT\tSTATE\tGUARANTEE\tCAPABILITY\tDESERVED\tALLOCATED\tSHARE\tPENDING\tADMITTED\tRUNNING")
	for _, r := range rows {
		name := strings.Repeat("  ", r.Depth) + r.Name
		if r.ParentMissing {
			name += " (parent " + r.Parent + " not in the tree)"
		}
		share := r.Share
		if share == "" {
			share = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", name, r.Weight, r.State,
			resources(r.Guarantee), resources(r.Capability), resources(r.Deserved), resources(r.Allocated),
			share, r.Pending, r.Admitted, r.Running)
	}
	return tw.Flush()
}
