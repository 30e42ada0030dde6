# jobctl %postun: after an upgrade, restart the coordinator if it was running, as
# %systemd_postun_with_restart. RPM has no purge: /var/lib/jobctl and the user stay.
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || :
  if [ "$1" -ge 1 ]; then
    systemctl try-restart jobctl-coordinator.service >/dev/null 2>&1 || :
  fi
fi
exit 0
