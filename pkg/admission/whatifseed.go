package admission

import (
	"time"

	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// ReservationSeed is one reservation the live scheduler published: a
// waiting PodGroup and its expected start (the
// scheduling.caldera.dev/expected-start annotation).
type ReservationSeed struct {
	Group gangbook.GroupKey
	Start time.Time
}

// Seed outcomes SeedReservations reports for the seeds it leaves out.
const (
	SeedNoUnit   = "its PodGroup has no unit in the snapshot"
	SeedAdmitted = "its unit is admitted in the snapshot"
	SeedTwice    = "named twice"
)

// ReservationView is a reservation the last pass kept: for what-if, which
// shows where the live plan's reservations stand on its copy.
type ReservationView struct {
	// Unit is the reserved unit's key, pg:NAMESPACE/NAME.
	Unit  string    `json:"unit"`
	Start time.Time `json:"start"`
	// Nodes are where its members are planned to start.
	Nodes []string `json:"nodes,omitempty"`
}
