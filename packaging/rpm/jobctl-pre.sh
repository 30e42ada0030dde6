# jobctl %pre: the jobctl system user and group, before the files that belong to them.
getent group jobctl >/dev/null || groupadd -r jobctl
getent passwd jobctl >/dev/null ||
  useradd -r -g jobctl -d /var/lib/jobctl -s /sbin/nologin -c "jobctl coordinator" jobctl
exit 0
