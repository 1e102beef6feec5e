-- Network plugin: an NCCL net plugin serves its own library (aws-ofi-rccl RCCL, aws-ofi-nccl
-- NCCL); gloo and oneCCL load no such plugin. The library file itself is sitegen doctor's check.

local library_of = { ["aws-ofi-rccl"] = "rccl", ["aws-ofi-nccl"] = "nccl" }

rule {
  name = "network-plugin",
  description = "collectives.network_plugin serves collectives.library (aws-ofi-rccl: rccl, aws-ofi-nccl: nccl; none for gloo/oneccl)",
  check = function(site)
    local plugin, library = site.collectives.network_plugin, site.collectives.library
    if plugin == "" then return end
    local at = pathof(site.collectives, "network_plugin")
    if library ~= "nccl" and library ~= "rccl" then
      warn_at(at, ("network plugin '%s' is loaded only by NCCL or RCCL, but the collective library is '%s'"):format(plugin, library))
      return
    end
    local wants = library_of[plugin]
    if wants and wants ~= library then
      error_at(at, ("network plugin '%s' is for %s, but the collective library is '%s'"):format(plugin, wants, library))
    end
  end,
}
