/*
 * netpolicy/addr.c: an address as text, for the messages of the allowlist
 * (netpolicy/allow.c) and of the ranges no sandbox reaches
 * (netpolicy/special.c). Its own file so that neither of them calls the
 * other back.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>

#include "netpolicy/allow-int.h"

void sbx__addr_format(int family, const uint8_t *addr, char *dst, size_t len)
{
	if (!inet_ntop(family, addr, dst, (socklen_t)len))
		snprintf(dst, len, "?");
}
