// Package device finds the devices Tartan can run on, chooses one and
// remembers the choice.
//
// Entry points:
//
//   - List (list.go): the CPU backend always, every OpenCL device with
//     its stable id "opencl:<platform>:<device>" and every Vulkan device
//     ("vulkan:<index>"); one entry is recommended (a discrete GPU over an
//     integrated one over Tartan's CPU backend over OpenCL on a CPU), with
//     the reason. Without OpenCL, or without a GPU, the listing notes every
//     library tried and carries an install hint.
//   - Ranking (rank.go): by kind, except that the backends of the same
//     hardware (OpenCL and Vulkan on one GPU; the CPU backend, OpenCL and
//     Vulkan on the host's CPU) that have cached measurements are ordered
//     by them. Listing.Reason says which decided.
//   - Measure (measure.go, measurecache.go): times a small training step
//     on devices, each within MeasureTimeout, and keeps the figures in
//     $XDG_CACHE_HOME/tartan/measurements.json keyed by id, name and
//     driver; List reads them and never measures.
//   - Choose (choice.go): which device a run without --device uses and why
//     ($TARTAN_DEVICE, the config file, or the recommendation), as Select
//     decides, without opening it.
//   - Open and Select (open.go): open a device by id, or pick one from the
//     --device flag, then $TARTAN_DEVICE, then the config file, then the best
//     available. A configured device that is missing falls back to the CPU
//     with a warning.
//   - LoadConfig and SaveConfig (config.go): $XDG_CONFIG_HOME/tartan/config.json
//     (default ~/.config/tartan), written atomically.
//   - Check (check.go): a quick correctness check of a device against the
//     reference executor, and the time of a 256×256 product to compare
//     devices by.
//   - Setup (setup.go): the interactive setup (measure the devices of
//     shared hardware not yet measured, list, recommend, ask, check, save),
//     or non-interactive with a device id and Yes. A chosen device
//     that runs the check's product much slower than the recommended one
//     is warned about: interactively saved only on yes, with Yes saved
//     with a warning.
package device
