package evictionstrategy

import (
	"strings"
	"testing"
)

func TestMessage(t *testing.T) {
	tests := []struct {
		name, strategy, current string
		vms                     []string
		want                    string
	}{
		{"unchanged", "LiveMigrate", "LiveMigrate", []string{"vms/a"}, "will be LiveMigrate (now LiveMigrate): no VM's fate changes"},
		{"every VM sets its own", "None", "", nil, "(now unset): no running VM follows it now"},
		{"two follow", "None", "LiveMigrate", []string{"vms/a", "vms/b"}, "in the next drain, 2 running VM(s) without their own evictionStrategy are handled as None: vms/a, vms/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := message(tt.strategy, tt.current, tt.vms); !strings.Contains(got, tt.want) {
				t.Errorf("message = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}
