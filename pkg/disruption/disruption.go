// Package disruption says what keeps cluster autoscalers from breaking a
// running gang when they scale down.
//
// Karpenter's consolidation and cluster-autoscaler's scale-down evict the
// pods of a node they remove, one by one, with no idea that the pods form a
// gang: evicting one member of a gang that runs exactly minMember stops
// the whole job (an MPI or training job cannot continue a rank short).
// Each autoscaler honours a pod annotation that keeps the pod's node: a
// running gang's members carry both. A PodDisruptionBudget per gang would
// spare members beyond minMember, but it needs a label selector unique to
// the gang's pods, which none of the gang dialects guarantees (Volcano and
// upstream gangs name their group without a pod label); the annotations
// work for every dialect.
//
// A pod that already carries one of the keys keeps its value: a user who
// lets an autoscaler move a gang writes, say, karpenter.sh/do-not-disrupt:
// "false" in the pod template, and Caldera leaves it.
package disruption

const (
	// KarpenterDoNotDisrupt keeps Karpenter from voluntarily disrupting
	// (consolidating, drifting) the node of a pod with value "true".
	KarpenterDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// ClusterAutoscalerSafeToEvict keeps cluster-autoscaler from scaling
	// down the node of a pod with value "false".
	ClusterAutoscalerSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
)

// protecting are the annotations a running gang's member carries.
var protecting = [...]struct{ key, value string }{
	{KarpenterDoNotDisrupt, "true"},
	{ClusterAutoscalerSafeToEvict, "false"},
}

// Unprotected reports whether a pod with these annotations lacks one of
// the protecting keys. O(1), no allocation.
func Unprotected(annotations map[string]string) bool {
	for _, p := range protecting {
		if _, ok := annotations[p.key]; !ok {
			return true
		}
	}
	return false
}

// Missing returns the protecting annotations a pod with these annotations
// lacks, with their values; nil when it has every key (whatever the value).
func Missing(annotations map[string]string) map[string]string {
	var out map[string]string
	for _, p := range protecting {
		if _, ok := annotations[p.key]; ok {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[p.key] = p.value
	}
	return out
}

// Member is what decides whether a gang member is owed protection.
type Member struct {
	// Bound: the member has a node. A member is bound only once its gang's
	// minimum is placed, so a bound member belongs to a gang that runs or
	// is starting.
	Bound bool
	// Finished: the member succeeded or failed; its node no longer runs it.
	Finished bool
	// MinMember is the gang's minimum. A gang of one is a plain pod: losing
	// it stops nothing else, and its node may be consolidated as usual.
	MinMember int32
	// Annotations are the member's own.
	Annotations map[string]string
}

// Owed reports whether m is to be given the protecting annotations: a
// bound, unfinished member of a gang of two or more that lacks one of
// them. O(1).
func Owed(m Member) bool {
	return m.Bound && !m.Finished && m.MinMember >= 2 && Unprotected(m.Annotations)
}
