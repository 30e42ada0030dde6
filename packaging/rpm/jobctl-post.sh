# jobctl %post: as %systemd_post does, a first install applies the systemd preset policy
# (RHEL and Fedora ship "disable *" for units they do not know, so the admin enables the
# coordinator with systemctl enable --now). It is never started here.
if [ "$1" -eq 1 ] && [ -x /usr/bin/systemctl ]; then
  systemctl --no-reload preset jobctl-coordinator.service >/dev/null 2>&1 || :
fi
exit 0
