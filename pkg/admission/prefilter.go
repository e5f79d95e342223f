package admission

// PreFilterCode says why PreFilter refused a member.
type PreFilterCode int

// PreFilter outcomes.
const (
	PreFilterOK PreFilterCode = iota
	// PreFilterBackoff: the group failed recently and waits before retrying.
	PreFilterBackoff
	// PreFilterTooLarge: the group needs more than the whole cluster has.
	PreFilterTooLarge
	// PreFilterNoGroup: the PodGroup vanished after the pod was queued.
	PreFilterNoGroup
	// PreFilterOverCapability: a member beyond the gang's minimum would take
	// its queue or an ancestor past its capability.
	PreFilterOverCapability
	// PreFilterExtraEarly: a member beyond the gang's minimum waits for the
	// minimum to bind before it is checked against capability.
	PreFilterExtraEarly
	// PreFilterCapabilityDeficit: the unit was admitted on room that
	// evictions in its queue or subtree would free, and placing its minimum
	// now would take a queue past its capability (deficit.go). Reported
	// for pods outside any gang too.
	PreFilterCapabilityDeficit
	// PreFilterOverShare: a member beyond the gang's minimum would take its
	// queue or an ancestor above its deserved share; the admission pass
	// activates it when it fits.
	PreFilterOverShare
	// PreFilterAwaitingRoom: the pod's unit is refused for capacity and
	// not admitted (roomwait.go): the pod is Unschedulable until the
	// admission pass admits it, and its gang is neither started nor
	// released.
	PreFilterAwaitingRoom
	// PreFilterNotAdmitted: the pod's unit is not admitted, for a reason
	// no room cures. PreEnqueue keeps such pods out of the scheduling
	// queue, but pods a refusal for room let in are still there when a
	// later pass refuses their unit for quota: they must not bind.
	PreFilterNotAdmitted
)
