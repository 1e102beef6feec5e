-- Collective library: RCCL for AMD, NCCL for NVIDIA, oneCCL for Intel GPUs; Gloo on any site.

local vendor_of = { rccl = "amd", nccl = "nvidia", oneccl = "intel" }
local library_for = { amd = "rccl", nvidia = "nccl", intel = "oneccl" }

rule {
  name = "collective-vendor",
  description = "collectives.library matches hardware.gpu_vendor (rccl-amd, nccl-nvidia, oneccl-intel, gloo anywhere)",
  check = function(site)
    local library, vendor = site.collectives.library, site.hardware.gpu_vendor
    local needs = vendor_of[library]
    if not needs or needs == vendor then return end
    local fix = library_for[vendor] and ("use '" .. library_for[vendor] .. "' or 'gloo'") or "use 'gloo'"
    error_at(pathof(site.collectives, "library"),
      ("collective library '%s' is for %s GPUs but gpu_vendor is '%s' (%s)"):format(library, needs, vendor, fix))
  end,
}
