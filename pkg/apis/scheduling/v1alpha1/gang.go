package v1alpha1

// Gangs asked for on a pod template, without a hand-written PodGroup
// (docs/gangs.md; pkg/dialect/annotation reads them). The pods that share
// one controller ownerReference form one gang, whose PodGroup the scheduler
// creates. An annotation and not a label: the value is a number, not
// something to select on, and a pod's annotations may be changed by
// nobody's selector.
const (
	// GangMinMemberAnnotation asks for a gang of at least this many
	// members (a positive integer) among the pods of the pod's controller.
	GangMinMemberAnnotation = GroupName + "/gang-min-member"
	// GangTimeoutSecondsAnnotation is the created PodGroup's
	// scheduleTimeoutSeconds (a positive integer); optional.
	GangTimeoutSecondsAnnotation = GroupName + "/gang-timeout-seconds"
	// ManagedByLabel marks the PodGroups the scheduler created for gangs
	// asked for by annotation, with the value ManagedByCaldera.
	ManagedByLabel = GroupName + "/managed-by"
	// ManagedByCaldera is ManagedByLabel's value.
	ManagedByCaldera = "caldera"
)
