package queue

import (
	"os/exec"
	"testing"

	"lmtool.dev/lm/pkg/proc"
)

// A delivery is marked unconfirmed only when its consumer is known to have
// ended: one on this machine that ended, or of an earlier boot; never one
// of another machine sharing the queue's database, whose processes this
// machine's /proc cannot see (marking it would invite a requeue, and the
// instruction would be delivered twice).
func TestDeliveryUnconfirmedOnlyWhenItsConsumerKnownEnded(t *testing.T) {
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	gone := proc.Process{PID: ended.Process.Pid, Start: 1}
	me, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		consumer    *Consumer
		unconfirmed bool
	}{
		{"this process", &Consumer{Process: me, Machine: proc.MachineID(), Boot: proc.BootID()}, false},
		{"an ended process here", &Consumer{Process: gone, Machine: proc.MachineID(), Boot: proc.BootID()}, true},
		{"this pid, of an earlier boot", &Consumer{Process: me, Machine: proc.MachineID(), Boot: "an-earlier-boot"}, true},
		{"another machine's", &Consumer{Process: gone, Machine: "another-machine", Boot: "its-boot"}, false},
		{"recorded without machine and boot, ended", &Consumer{Process: gone}, true},
		{"unknown", nil, true},
	} {
		r := Record{ID: "x", Status: StatusConsumed, Unacknowledged: true, Consumer: tc.consumer}
		if got := r.instruction(0).Unconfirmed; got != tc.unconfirmed {
			t.Errorf("%s: delivery_unconfirmed %v, want %v", tc.name, got, tc.unconfirmed)
		}
	}
}
