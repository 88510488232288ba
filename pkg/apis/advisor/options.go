package advisor

// The blocks of spec.options, by their JSON names. Each tunes one profile,
// which names its block in its metadata (profiles.Metadata.Options);
// validation admits on a config only the block of its profile.
const (
	OptionsLoadAware         = "loadAware"
	OptionsVirtHigherDensity = "virtHigherDensity"
)
