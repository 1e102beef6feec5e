-- Launcher and scheduler go together: srun with Slurm, mpiexec with PBS, flux (flux run) with Flux.

local launcher_for = { slurm = "srun", pbs = "mpiexec", flux = "flux" }

rule {
  name = "launcher-scheduler",
  description = "site.launcher is the one of site.scheduler (srun-slurm, mpiexec-pbs, flux-flux)",
  check = function(site)
    local expected = launcher_for[site.site.scheduler]
    if expected and site.site.launcher ~= expected then
      error_at(pathof(site.site, "launcher"), ("launcher '%s' does not go with scheduler '%s' (use '%s')")
        :format(site.site.launcher, site.site.scheduler, expected))
    end
  end,
}
