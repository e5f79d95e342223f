// Package runlimit says how long a job may hold its room: the run-time
// limit a pod declares, when a running pod ends at the latest, and, for jobs
// that declare nothing, an estimate learned from the run times of the
// queue's finished jobs. It is the policy pkg/plan's callers need to turn
// pods into Allocs (End, EstimatedEnd) and gangs into Gangs (Limit); the
// user's view is docs/runlimits.md.
//
// Like pkg/convert it reads Kubernetes objects (k8s.io/api core types) but
// holds no client, informer or scheduler framework: the standard library
// and k8s.io/api only, and no state but the Estimator's.
//
// # Declared limits
//
// A limit comes from one of four sources (Source): the pod's
// spec.activeDeadlineSeconds (the kubelet kills the pod that long after its
// status.startTime), the annotation scheduling.caldera.dev/max-run-seconds
// on the pod (set it on a pod template), the owning Job's
// spec.activeDeadlineSeconds (the Job controller fails the Job that long
// after the Job's start), and the same annotation on the PodGroup. Each is
// a promise that the job has ended by then, so when several are set the
// smallest holds and Of returns it. The two deadlines are enforced by a
// kill that may take the pod's termination grace period, so their Limit
// carries that Grace and the room is back only after Seconds+Grace (Hold);
// an annotation is the job's own promise to exit and has no grace.
//
// Limits count from the pod's start. A Job's deadline counts from the Job's
// start, which is never after its pods' starts, so counting it from the
// pod's start is late, never early: the end it gives is a true bound.
//
// EndOf turns a start and a Limit into the latest end on pkg/plan's clock
// (Unix seconds, Unbounded without a limit). A pod past that end still
// holds its room until it is gone: Expected answers now+1 for it, as
// pkg/plan's model has it, so a plan never counts on room an overrunning
// pod has not given back.
//
// # Estimates
//
// Estimator learns, per queue and cluster-wide, the run times of the last
// Window finished jobs and answers a high quantile (0.9 by default) of
// them: the run time most of the queue's recent jobs stayed within. Values
// are counted in fixed bins (exact up to 64 s, then 16 per doubling, at
// most 6.25% wide) in a Fenwick tree, so an observation and a query each
// cost O(log bins), memory is fixed per queue, and the answer (the upper
// edge of the quantile's bin, never below the exact sample quantile and at
// most 6.25% above it) depends only on the sequence of observations. For a
// job that has already run for a while the quantile is taken over the
// samples longer than that. See Estimator for the fallbacks.
package runlimit
