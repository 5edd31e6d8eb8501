-- every kernel with its operator identity (op), category (rules file), end_ns, whether it counts as compute / comm / a memory copy, and whether it is a VAE-signature kernel (Conv, GroupNorm, upsampling)
-- Joined to kernel_classes on the raw (type, name, core), so no per-kernel text is rewritten or copied.
SELECT kn.*, b.op, kn.start_ns + kn.dur_ns AS end_ns, b.category, b.is_compute, b.is_comm, b.vae_sig, b.is_copy
FROM kernels kn
JOIN kernel_classes b ON kn.type IS NOT DISTINCT FROM b.type AND kn.name IS NOT DISTINCT FROM b.name
             AND kn.core IS NOT DISTINCT FROM b.core
