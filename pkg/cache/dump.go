package cache

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// DumpDirEnv names the directory SIGUSR1 dumps are written to; the default is
// os.TempDir().
const DumpDirEnv = "CALDERA_DUMP_DIR"

// CacheDump is the JSON form of the shared cache (see docs/cache-dump.md).
// Amounts are flattened like resources.List: cpu in millicores, every other
// resource in its base unit.
type CacheDump struct {
	Time    time.Time             `json:"time"`
	Cluster ClusterDump           `json:"cluster"`
	Queues  []admission.QueueDump `json:"queues"`
	Groups  []GroupDump           `json:"groups"`
	Options *admission.Options    `json:"admissionOptions,omitempty"`
}

// ClusterDump is the cluster's totals.
type ClusterDump struct {
	Nodes       int            `json:"nodes"`
	Allocatable resources.List `json:"allocatable"`
	// Used is what bound, unfinished pods request (with queue admission on).
	Used resources.List `json:"used,omitempty"`
	// Outside is what bound pods in no queue request (other schedulers'
	// pods, pods Caldera does not queue): fair share divides Allocatable
	// less this.
	Outside resources.List `json:"outside,omitempty"`
}

// GroupDump is one group.
type GroupDump struct {
	Key       string `json:"key"`
	Phase     string `json:"phase"`
	PodGroup  bool   `json:"podGroup"`
	MinMember int32  `json:"minMember"`
	// Counts are the member aggregates (members, active, pending, waiting,
	// placed, bound, running, succeeded, failed).
	Counts        map[string]int `json:"counts"`
	Enqueueable   bool           `json:"enqueueable"`
	FirstAttempt  *time.Time     `json:"firstAttempt,omitempty"`
	BackoffUntil  *time.Time     `json:"backoffUntil,omitempty"`
	Failures      int            `json:"backoffFailures,omitempty"`
	Unschedulable string         `json:"unschedulable,omitempty"`
	MinRequest    resources.List `json:"minRequest"`
	// GroupAdmission is its queue, admission and reservation over time
	// (or estimated start); without queue admission it is admitted.
	admission.GroupAdmission
}

// Dump renders the cache as JSON. The lock is held only while copying into
// plain structs; encoding runs without it.
func (c *Cache) Dump() ([]byte, error) {
	d := c.snapshot(time.Now())
	return json.Marshal(d)
}

func (c *Cache) snapshot(now time.Time) *CacheDump {
	c.mu.RLock()
	d := &CacheDump{
		Time:    now.UTC(),
		Cluster: ClusterDump{Nodes: len(c.nodes), Allocatable: c.total.Clone()},
		Queues:  []admission.QueueDump{},
		Groups:  make([]GroupDump, 0, len(c.groups)),
	}
	if a := c.adm; a.On() {
		opts := a.Opts
		d.Options = &opts
		d.Cluster.Used = a.Used.Clone()
		d.Cluster.Outside = a.Outside.Clone()
		d.Queues = a.QueueDumpsLocked()
	}
	for key, g := range c.groups {
		d.Groups = append(d.Groups, dumpGroup(g, key, c.adm, now))
	}
	c.mu.RUnlock()
	sort.Slice(d.Groups, func(i, j int) bool { return d.Groups[i].Key < d.Groups[j].Key })
	return d
}

// dumpGroup dumps g, the group of key: its counts, backoff and, from a, the
// admission side, its admission. The caller holds the cache's lock.
func dumpGroup(g *gangbook.Group, key gangbook.GroupKey, a *admission.State, now time.Time) GroupDump {
	gd := GroupDump{
		Key:         key.String(),
		Phase:       string(gang.PhaseOf(g.Spec, g.Counts)),
		PodGroup:    g.Obj != nil,
		MinMember:   g.Spec.MinMember,
		Enqueueable: g.Enqueueable,
		Counts: map[string]int{
			"members": g.Counts.Members, "active": g.Counts.Active, "pending": g.Counts.Pending,
			"waiting": g.Counts.Waiting, "placed": g.Counts.Placed, "bound": g.Counts.Bound,
			"running": g.Counts.Running, "succeeded": g.Counts.Succeeded, "failed": g.Counts.Failed,
		},
		Failures:      g.Backoff.Failures,
		Unschedulable: g.Unschedulable,
		MinRequest:    minRequestRLocked(g),
	}
	if !g.FirstAttempt.IsZero() {
		t := g.FirstAttempt.UTC()
		gd.FirstAttempt = &t
	}
	if g.Backoff.Active(now) {
		t := g.Backoff.Until.UTC()
		gd.BackoffUntil = &t
	}
	if a.On() {
		gd.GroupAdmission = a.GroupAdmissionLocked(key)
	} else {
		// Without queue admission every group is admitted.
		gd.Admitted = true
	}
	return gd
}

// dumpFileName is caldera-cache-<time>.json, the time in RFC 3339 without
// colons (which some file systems and tools dislike).
func dumpFileName(now time.Time) string {
	return "caldera-cache-" + now.UTC().Format("2006-01-02T15-04-05.000000000Z") + ".json"
}

// DumpToFile writes Dump's JSON to a new file in dir (CALDERA_DUMP_DIR, else
// os.TempDir() when dir is empty) and returns its path.
func (c *Cache) DumpToFile(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(DumpDirEnv)
	}
	if dir == "" {
		dir = os.TempDir()
	}
	data, err := c.Dump()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, dumpFileName(time.Now()))
	// Write then rename, so a reader polling the directory never sees half a file.
	tmp, err := os.CreateTemp(dir, ".caldera-cache-*.tmp")
	if err != nil {
		return "", fmt.Errorf("creating cache dump: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing cache dump: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing cache dump: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing cache dump: %w", err)
	}
	return path, nil
}

// minRequestRLocked is minRequestLocked for a reader: it uses the group's
// cached answer when valid and otherwise computes one without storing it.
func minRequestRLocked(g *gangbook.Group) resources.List {
	if g.MinRequestValid {
		return g.MinRequest.Clone()
	}
	reqs := make([]resources.List, 0, g.Counts.Active)
	for _, m := range g.Members {
		if m.State.Reachable() {
			reqs = append(reqs, m.Request)
		}
	}
	return gang.MinRequest(g.Spec, reqs).Clone()
}
