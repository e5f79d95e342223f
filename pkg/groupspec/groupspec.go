// Package groupspec is Caldera's own description of a gang, whatever API
// defined it. Each dialect's adapter (pkg/dialect/...) reads its objects
// into a Spec; the cache, admission and the policy packages read only the
// Spec, so none of them branches on where a gang came from. What the
// dialects do differently is said here as data (Rules), not as the
// dialect's name. The package is pure Go: no client, no API types.
package groupspec

import (
	"time"

	"github.com/caldera-sched/caldera/pkg/gang"
)

// Dialect names an API that defines gangs. It is for identity (two
// dialects may name one group; the first seen holds it), Events and the
// status writer, which writes each dialect's status its own way.
type Dialect string

// The dialects Caldera reads.
const (
	// SchedulerPlugins is scheduling.x-k8s.io/v1alpha1, also the API of
	// the PodGroups Caldera creates for gangs asked for by annotation.
	SchedulerPlugins Dialect = "scheduler-plugins"
	// Volcano is scheduling.volcano.sh/v1beta1.
	Volcano Dialect = "volcano"
	// Upstream is Kubernetes' own scheduling.k8s.io PodGroups.
	Upstream Dialect = "upstream"
)

// Source identifies the API object a Spec was read from.
type Source struct {
	Dialect Dialect
	// APIVersion is the object's group/version, for Event references.
	APIVersion      string
	Namespace, Name string
	UID             string
	ResourceVersion string
	// Created is the object's creation time (whole seconds, as the API
	// server stores it).
	Created time.Time
}

// Rules are the ways a dialect's gangs behave differently, as data.
type Rules struct {
	// MembersAfterAdmission: the dialect's controller creates the members
	// only once the group is admitted (Volcano's job controller waits for
	// Inqueue). Admission then counts minMember members before any exists
	// and judges a pod-less group by its sums; an admitted group with no
	// members yet holds its minimum; and pods created before the group's
	// object, terminating, are left over from an earlier object of the
	// name (a restarted job), not members.
	MembersAfterAdmission bool
	// DisruptAll: the group's running members are disrupted together or
	// not at all (upstream's disruptionMode all).
	DisruptAll bool
}

// Spec is one gang as Caldera reads it.
type Spec struct {
	Source Source
	// Gang is what the gang policy reads: minMember, minResources in the
	// policy's resource form, the Permit timeout.
	Gang gang.Spec
	// Queue is the queue the object names; "" lets the members' label, the
	// namespace's default queue or the cluster default decide.
	Queue string
	// PriorityClassName is the object's own priority class, "" when unset.
	// Members carry the priority Caldera orders by; this is for display.
	PriorityClassName string
	// Admitted: the object records that this gang was admitted (by an
	// earlier leader or process), so a restarted scheduler keeps the
	// admission instead of deciding it again past capacity.
	Admitted bool
	// Started: the object records that the gang ran already; one with no
	// member left is done, not about to begin.
	Started bool
	Rules   Rules
	// Annotations are the object's, shared with the informer's copy and
	// never written: what Caldera reads from them besides the spec is a
	// run-time limit (pkg/runlimit's annotation, for every member).
	Annotations map[string]string
}

// Key is the namespace/name of the group, for logs and messages.
func (s *Spec) Key() string { return s.Source.Namespace + "/" + s.Source.Name }

// SameObject reports whether a and b were read from one API object
// (dialect and uid): an update, not a replacement.
func SameObject(a, b *Spec) bool {
	return a != nil && b != nil && a.Source.Dialect == b.Source.Dialect && a.Source.UID == b.Source.UID
}

// Progress is what a group's status is made from, in every dialect: the
// cache fills it, and the status writer turns it into the dialect's
// status fields and conditions.
type Progress struct {
	// Phase is the group's lifecycle phase in scheduler-plugins' words.
	Phase gang.Phase
	// MinMember is the spec's, for messages.
	MinMember int32
	// Members, Placed, Running, Succeeded and Failed count the members.
	Members, Placed, Running, Succeeded, Failed int
	// FirstAttempt is when a member was first tried; zero before.
	FirstAttempt time.Time
	// Admitted: the gang is admitted to its queue (always, without queue
	// admission).
	Admitted bool
	// Why is why the gang is not placed: the queue's verdict as last told
	// before admission, the last reason the scheduler could not place it
	// after; "" when nothing stops it.
	Why string
}
