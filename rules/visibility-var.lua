-- GPU visibility variable: ROCR_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES (AMD), CUDA_VISIBLE_DEVICES (NVIDIA), ZE_AFFINITY_MASK (Intel).

local allowed = {
  amd = { "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES" },
  nvidia = { "CUDA_VISIBLE_DEVICES" },
  intel = { "ZE_AFFINITY_MASK" },
}

rule {
  name = "visibility-var",
  description = "collectives.visibility_var is the variable the GPU vendor's runtime reads",
  check = function(site)
    local var, vendor = site.collectives.visibility_var, site.hardware.gpu_vendor
    local path = pathof(site.collectives, "visibility_var")
    local names = allowed[vendor]
    if var == "" then
      -- visibility = "all" says so on purpose: the program picks its device by LOCAL_RANK.
      if site.collectives.visibility == "all" then return end
      if names and site.hardware.devices_per_node > 0 then
        warn_at("collectives", ("no visibility_var: every rank sees all %d GPUs of its node (set %s)")
          :format(site.hardware.devices_per_node, table.concat(names, " or ")))
      end
      return
    end
    if not names then
      error_at(path, ("visibility_var '%s' is set but the site has no GPUs (gpu_vendor '%s')"):format(var, vendor))
      return
    end
    for _, name in ipairs(names) do
      if name == var then return end
    end
    error_at(path, ("visibility_var '%s' does not select %s GPUs (use %s)"):format(var, vendor, table.concat(names, " or ")))
  end,
}
