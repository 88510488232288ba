package advisor

import (
	"testing"
	"time"
)

func TestParseWaitTimeout(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "", want: 0},
		{in: "30m", want: 30 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "soon", wantErr: "must be a Go duration such as 30m or 1h30m"},
		{in: "30", wantErr: "must be a Go duration such as 30m or 1h30m"},
		{in: "0s", wantErr: "must be positive; leave it unset to wait forever"},
		{in: "-5m", wantErr: "must be positive; leave it unset to wait forever"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseWaitTimeout(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseWaitTimeout(%q) = %v, %v; want the error %q", tt.in, got, err, tt.wantErr)
				}
				if got != 0 {
					t.Errorf("ParseWaitTimeout(%q) = %v with an error, want 0", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseWaitTimeout(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}
