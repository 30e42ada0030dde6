# jobctl %preun: on erase (not upgrade) disable and stop the coordinator, as %systemd_preun.
if [ "$1" -eq 0 ] && [ -x /usr/bin/systemctl ]; then
  systemctl --no-reload disable --now jobctl-coordinator.service >/dev/null 2>&1 || :
fi
exit 0
