package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations Caldera reads and writes on other objects.
const (
	// QueueLabel names the Queue a group is scheduled through. It is read from
	// the PodGroup, else from the pod (for a pod without a PodGroup, or a
	// PodGroup without the label), else from the pod's Namespace; without it
	// anywhere the scheduler's configured default queue is used.
	QueueLabel = GroupName + "/queue"

	// AdmittedAtAnnotation is written by the scheduler on a PodGroup when its
	// queue admits it (Volcano's "Inqueue"): the admission time in RFC 3339
	// format. Its presence is how users and tools see that a group has
	// passed admission and its pods may be scheduled.
	AdmittedAtAnnotation = GroupName + "/admitted-at"

	// VerdictAnnotation is written by the scheduler on a PodGroup that
	// waits: while its queue has not admitted it, why (the NotAdmitted
	// message, e.g. "queue team-a: cpu request 3 exceeds remaining
	// capability 1"), removed at admission; once admitted, why its members
	// cannot be placed ("admitted, but its members cannot be placed: ..."),
	// removed when it starts. Rewritten when that changes.
	// scheduler-plugins' PodGroup status has no conditions, and Events
	// expire.
	VerdictAnnotation = GroupName + "/verdict"

	// ExpectedStartAnnotation is written by the scheduler on a waiting
	// PodGroup that holds a reservation: when its members are planned to
	// start (RFC 3339), given the run-time limits of the pods it waits
	// for. Removed at admission, or when the reservation ends.
	ExpectedStartAnnotation = GroupName + "/expected-start"

	// EstimatedStartAnnotation is written by the scheduler on a waiting
	// PodGroup that holds no reservation because pods it waits for declare
	// no run-time limit: when its members would start (RFC 3339) if those
	// pods end as their queues' recent pods did. An estimate, not a
	// promise; removed at admission, when a reservation replaces it, or
	// when it no longer heads its queue.
	EstimatedStartAnnotation = GroupName + "/estimated-start"
)

// DefaultQueueName is the queue used when no QueueLabel applies, unless the
// scheduler is configured otherwise; the scheduler creates it if missing.
const DefaultQueueName = "default"

// Bounds and default of QueueSpec.Weight, also enforced by the CRD.
const (
	MinQueueWeight     int32 = 1
	MaxQueueWeight     int32 = 65535
	DefaultQueueWeight int32 = 1
)

// QueueState says whether a Queue admits new groups.
//
// +kubebuilder:validation:Enum=Open;Closed
type QueueState string

const (
	// QueueStateOpen queues admit new groups. It is the default.
	QueueStateOpen QueueState = "Open"
	// QueueStateClosed queues admit no new groups; groups already admitted
	// keep running and keep being scheduled.
	QueueStateClosed QueueState = "Closed"
)

// Condition types of QueueStatus.Conditions, written by the status
// reconciler. Each is True while the situation lasts and is set to False (not
// removed) when it ends, so lastTransitionTime tells when it last changed.
const (
	// QueueConditionInvalidParent is True when spec.parent names a Queue that
	// does not exist or the parent chain loops back (see ReasonParentNotFound,
	// ReasonParentCycle). The hierarchy cannot place such a queue under its
	// intended parent; the message says how the scheduler treats it meanwhile.
	QueueConditionInvalidParent = "InvalidParent"

	// QueueConditionOverDeserved is True when status.allocated exceeds
	// status.deserved for at least one resource: the queue is using capacity
	// other queues are entitled to, and, if spec.reclaimable, its workloads
	// above guarantee are candidates for reclaim. The message names the
	// resources.
	QueueConditionOverDeserved = "OverDeserved"

	// QueueConditionOverCapability is True when status.allocated exceeds
	// spec.capability (of the queue or of an ancestor) for at least one
	// resource, for example after capability was lowered: no new group is
	// admitted until usage falls back under it. The message names the
	// resources.
	QueueConditionOverCapability = "OverCapability"

	// QueueConditionGuaranteeUnsatisfiable is True when spec.guarantee cannot
	// be honoured in full: the guarantees of this queue and its siblings add
	// up to more than their parent's guarantee or capability, or than the
	// cluster's capacity. The message names the resources.
	QueueConditionGuaranteeUnsatisfiable = "GuaranteeUnsatisfiable"
)

// Reasons of QueueStatus.Conditions.
const (
	// ReasonParentNotFound: spec.parent names a Queue that does not exist.
	ReasonParentNotFound = "ParentNotFound"
	// ReasonParentCycle: following spec.parent leads back to this queue.
	ReasonParentCycle = "ParentCycle"
	// ReasonParentValid: spec.parent is empty or names an existing queue.
	ReasonParentValid = "ParentValid"
	// ReasonWithinDeserved: allocated is within deserved for every resource.
	ReasonWithinDeserved = "WithinDeserved"
	// ReasonAboveDeserved: allocated exceeds deserved for some resource.
	ReasonAboveDeserved = "AboveDeserved"
	// ReasonWithinCapability: allocated is within capability for every resource.
	ReasonWithinCapability = "WithinCapability"
	// ReasonAboveCapability: allocated exceeds capability for some resource.
	ReasonAboveCapability = "AboveCapability"
	// ReasonGuaranteeSatisfiable: the guarantee fits its parent and the cluster.
	ReasonGuaranteeSatisfiable = "GuaranteeSatisfiable"
	// ReasonGuaranteeOvercommitted: guarantees exceed what can back them.
	ReasonGuaranteeOvercommitted = "GuaranteeOvercommitted"
)

// Queue is a cluster-scoped share of the cluster that groups of pods
// (PodGroups, or single pods) are admitted through. Queues divide capacity by
// weight, within an optional capability (maximum) and above an optional
// guarantee (reserved minimum), and may be nested through spec.parent.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=calq,categories=caldera
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`,description="Relative share of the parent's capacity"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.state`,description="Open queues admit new groups, Closed ones do not"
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parent`,description="Parent queue; empty for a top-level queue"
// +kubebuilder:printcolumn:name="Share",type=string,JSONPath=`.status.share`,description="Allocated / deserved, the largest over resources"
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pending`,description="Groups waiting for admission"
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=`.status.admitted`,description="Groups admitted and not yet running"
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.running`,description="Groups running"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.parent) || self.spec.parent != self.metadata.name",message="spec.parent must name another queue: a queue cannot be its own parent",fieldPath=".spec.parent"
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired behaviour of the queue.
	// +kubebuilder:default={}
	// +optional
	Spec QueueSpec `json:"spec,omitempty"`

	// status is the queue's observed usage and fair share, written by the
	// scheduler.
	// +optional
	Status QueueStatus `json:"status,omitempty"`
}

// Notes on the CEL rules below (the CRD's x-kubernetes-validations).
//
// The apiserver refuses a CRD whose rules' *estimated* worst-case cost exceeds
// 10M units per expression. corev1.ResourceList values are int-or-string with
// no maxLength (controller-gen has no marker for map values), so each value is
// estimated at ~3MB and every quantity() parse at ~315k units. Hence:
//   - capability and guarantee carry MaxProperties, without which no iteration
//     over them fits the budget;
//   - the negative-quantity rules test the sign textually (an int below 0, or
//     a string starting with '-', which the quantity pattern otherwise
//     validates), at a few units per entry, so capability may name many
//     resources;
//   - guarantee <= capability must parse two quantities per guaranteed
//     resource (~630k units), so guarantee names at most 12 resources
//     (7.6M units, rule and messageExpression each);
//   - ints are turned into quantities with quantity('0').add(int(v)), since
//     quantity() takes only strings and string(v) of a dynamic value is
//     estimated as unbounded; join() in messages is unbounded too, so a
//     message names the first offending resource only.
// test/integration/queueapi proves the CRD is accepted and the rules work.

// QueueSpec is the desired behaviour of a Queue.
//
// +kubebuilder:validation:XValidation:rule="!has(self.guarantee) || !has(self.capability) || self.guarantee.all(r, !(r in self.capability) || !((type(self.guarantee[r]) == int ? quantity('0').add(int(self.guarantee[r])) : quantity(self.guarantee[r])).compareTo((type(self.capability[r]) == int ? quantity('0').add(int(self.capability[r])) : quantity(self.capability[r]))) > 0))",message="spec.guarantee must not exceed spec.capability for any resource named in both",messageExpression="'spec.guarantee must not exceed spec.capability: the guarantee of ' + self.guarantee.filter(r, r in self.capability && (type(self.guarantee[r]) == int ? quantity('0').add(int(self.guarantee[r])) : quantity(self.guarantee[r])).compareTo((type(self.capability[r]) == int ? quantity('0').add(int(self.capability[r])) : quantity(self.capability[r]))) > 0)[0] + ' is above its capability'",fieldPath=".guarantee"
type QueueSpec struct {
	// weight is the queue's share of its parent's capacity (of the cluster
	// for a top-level queue) relative to its siblings with demand: a queue of
	// weight 2 deserves twice as much as one of weight 1. 1 to 65535; 0 (unset)
	// means the default, 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=1
	// +optional
	Weight int32 `json:"weight,omitempty"`

	// capability is the most the queue (with its descendants) may be
	// allocated, per resource; resources not named are unlimited. Groups that
	// would take the queue above it are not admitted. At most 64 resources.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(r, !(type(self[r]) == int ? self[r] < 0 : self[r].startsWith('-')))",message="spec.capability must not contain negative quantities",messageExpression="'spec.capability must not contain negative quantities: ' + self.filter(r, (type(self[r]) == int ? self[r] < 0 : self[r].startsWith('-')))[0] + ' is negative'"
	// +optional
	Capability corev1.ResourceList `json:"capability,omitempty"`

	// guarantee is reserved for the queue, per resource: its deserved share
	// never drops below it, and reclaim never takes the queue below it. It
	// must not exceed capability for any resource named in both. At most 12
	// resources.
	// +kubebuilder:validation:MaxProperties=12
	// +kubebuilder:validation:XValidation:rule="self.all(r, !(type(self[r]) == int ? self[r] < 0 : self[r].startsWith('-')))",message="spec.guarantee must not contain negative quantities",messageExpression="'spec.guarantee must not contain negative quantities: ' + self.filter(r, (type(self[r]) == int ? self[r] < 0 : self[r].startsWith('-')))[0] + ' is negative'"
	// +optional
	Guarantee corev1.ResourceList `json:"guarantee,omitempty"`

	// reclaimable says whether other queues may reclaim (evict) this queue's
	// workloads while it is allocated above its deserved share. Default true.
	// +kubebuilder:default=true
	// +optional
	Reclaimable *bool `json:"reclaimable,omitempty"`

	// parent is the name of the Queue this one is nested under; it divides
	// its parent's deserved share with its siblings. Empty means a top-level
	// queue (a child of the implicit root). A queue cannot be its own parent.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Parent string `json:"parent,omitempty"`

	// priority orders queues: groups of a higher-priority queue are
	// scheduled first; among queues of equal priority the one with the lower
	// share goes first. Default 0.
	// +kubebuilder:default=0
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// state is Open (the default) or Closed. A Closed queue admits no new
	// groups; groups already admitted keep running.
	// +kubebuilder:default=Open
	// +optional
	State QueueState `json:"state,omitempty"`
}

// QueueStatus is the observed state of a Queue, written by the scheduler's
// status reconciler.
type QueueStatus struct {
	// allocated is what the queue's scheduled pods (with its descendants')
	// request, per resource.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`

	// deserved is the queue's computed fair share, per resource: weighted
	// water-filling among queues with demand, capped by capability and
	// demand, raised to guarantee.
	// +optional
	Deserved corev1.ResourceList `json:"deserved,omitempty"`

	// share is allocated / deserved, the largest over resources, as a decimal
	// string (for example "0.42"); above 1 the queue uses more than it
	// deserves.
	// +optional
	Share string `json:"share,omitempty"`

	// pending counts groups waiting for admission.
	// +optional
	Pending int32 `json:"pending"`

	// admitted counts groups admitted whose pods are not yet all running.
	// +optional
	Admitted int32 `json:"admitted"`

	// running counts groups with at least minMember pods running.
	// +optional
	Running int32 `json:"running"`

	// completed counts groups that finished (succeeded or failed).
	// +optional
	Completed int32 `json:"completed"`

	// head is the first groups waiting for admission in the order the next
	// admission pass examines them (at most 20): a job's position in its
	// queue is its index here plus one. Groups still short of members, and
	// those whose request alone can never fit the queue, are not in the
	// order and not listed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Head []QueuedGroup `json:"head,omitempty"`

	// conditions are the queue's observations, keyed by type (InvalidParent,
	// OverDeserved, OverCapability, GuaranteeUnsatisfiable).
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// QueuedGroup names one group waiting in a queue.
type QueuedGroup struct {
	// kind is PodGroup for a gang, Pod for a pod outside any gang.
	// +kubebuilder:validation:Enum=PodGroup;Pod
	Kind string `json:"kind"`
	// namespace of the PodGroup or pod.
	Namespace string `json:"namespace"`
	// name of the PodGroup or pod.
	Name string `json:"name"`
}

// QueueList is a list of Queues.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the queues.
	Items []Queue `json:"items"`
}
