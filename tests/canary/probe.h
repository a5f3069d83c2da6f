/*
 * tests/canary/probe.h: the network probe that egress tests run inside a
 * sandbox (any backend with python3 in its image), and the parsing of its
 * answers.
 *
 * The probe is given triples MODE HOST PORT and prints one line per triple:
 * "ok ..." when something answered, "sent" when a datagram left with no
 * answer, or the errno name (ENETUNREACH, EPERM, ...), "timeout", or
 * "gaierror N". Modes: tcp (connect + HTTP GET, with a Host header when HOST
 * is a name), udp (echo), icmp (an echo
 * from a datagram ICMP socket), raw (the same from a raw socket), dns (a
 * query for probe.canary.test sent to HOST:PORT), resolve (getaddrinfo of
 * HOST, through whatever the sandbox has for a resolver).
 */
#ifndef SBX_TESTS_CANARY_PROBE_H
#define SBX_TESTS_CANARY_PROBE_H

#define CANARY_PROBE_PY                                                                            \
	"import socket,errno,sys,struct\n"                                                         \
	"def fam(h): return socket.AF_INET6 if ':' in h else socket.AF_INET\n"                     \
	"def isname(h):\n"                                                                         \
	"  try: socket.inet_pton(fam(h),h); return False\n"                                        \
	"  except OSError: return True\n"                                                          \
	"def csum(b):\n"                                                                           \
	"  s=sum(struct.unpack('!%dH'%(len(b)//2),b)); s=(s>>16)+(s&0xffff); s+=s>>16\n"           \
	"  return (~s)&0xffff\n"                                                                   \
	"a=sys.argv[1:]\n"                                                                         \
	"for i in range(0,len(a),3):\n"                                                            \
	"  m,h,p=a[i],a[i+1],int(a[i+2]); r='?'\n"                                                 \
	"  try:\n"                                                                                 \
	"    if m=='tcp':\n"                                                                       \
	"      s=socket.socket(fam(h),socket.SOCK_STREAM); s.settimeout(3); s.connect((h,p))\n"    \
	"      s.sendall(b'GET / HTTP/1.0\\r\\n'+(b'Host: '+h.encode()+b'\\r\\n' if isname(h) "    \
	"else b'')+b'\\r\\n'); d=b''\n"                                                            \
	"      while len(d)<400:\n"                                                                \
	"        x=s.recv(400)\n"                                                                  \
	"        if not x: break\n"                                                                \
	"        d+=x\n"                                                                           \
	"      r='ok '+' '.join(d.decode(errors='replace').split())\n"                             \
	"    elif m=='udp':\n"                                                                     \
	"      s=socket.socket(fam(h),socket.SOCK_DGRAM); s.settimeout(2); "                       \
	"s.sendto(b'ping',(h,p)); "                                                                \
	"r='sent'\n"                                                                               \
	"      r='ok '+s.recv(100).decode(errors='replace')\n"                                     \
	"    elif m in ('icmp','raw'):\n"                                                          \
	"      f=fam(h); v6=f==socket.AF_INET6\n"                                                  \
	"      s=socket.socket(f,socket.SOCK_DGRAM if m=='icmp' else socket.SOCK_RAW,"             \
	"socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP); s.settimeout(2)\n"                 \
	"      pk=struct.pack('!BBHHH',128 if v6 else 8,0,0,7,1)\n"                                \
	"      if not v6: pk=pk[:2]+struct.pack('!H',csum(pk))+pk[4:]\n"                           \
	"      s.sendto(pk,(h,0)); r='sent'; s.recv(100); r='ok'\n"                                \
	"    elif m=='dns':\n"                                                                     \
	"      "                                                                                   \
	"q=struct.pack('!HHHHHH',0x1234,0x100,1,0,0,0)+b'\\x05probe\\x06canary\\x04test\\x00'"     \
	"+struct.pack('!HH',1,1)\n"                                                                \
	"      s=socket.socket(fam(h),socket.SOCK_DGRAM); s.settimeout(2); s.sendto(q,(h,p)); "    \
	"r='sent'\n"                                                                               \
	"      d=s.recv(512); r='ok '+socket.inet_ntoa(d[-4:])\n"                                  \
	"    elif m=='resolve':\n"                                                                 \
	"      r='ok '+' '.join(sorted(set(x[4][0] for x in socket.getaddrinfo(h,p))))\n"          \
	"  except socket.gaierror as e: r='gaierror %d'%e.errno\n"                                 \
	"  except socket.timeout: r=r+' timeout' if r=='sent' else 'timeout'\n"                    \
	"  except OSError as e: r=(r+' ' if r=='sent' else "                                       \
	"'')+errno.errorcode.get(e.errno,str(e))\n"                                                \
	"  print(m,h,p,r,flush=True)\n"

#endif
