#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
# The rounding error of Winograd F(2x2,3x3) and F(4x4,3x3) against the direct sum, all in f32, for
# one 128-channel 3x3 layer (16x16, ReLU input, He-scaled weights), each measured against the
# direct sum in f64 (max and rms |error| / max |y|). docs/cpu-backend.md quotes its output (numpy).
import numpy as np
rng=np.random.default_rng(0)
C=O=128; H=W=16
x=np.maximum(rng.standard_normal((C,H+2,W+2)),0).astype(np.float32)
x[:,0,:]=0;x[:,-1,:]=0;x[:,:,0]=0;x[:,:,-1]=0
w=(rng.standard_normal((O,C,3,3))*np.sqrt(2/(C*9))).astype(np.float32)
def direct(x,w,dt):
    y=np.zeros((O,H,W),dt)
    for u in range(3):
        for v in range(3):
            y+=np.einsum('oc,chw->ohw',w[:,:,u,v].astype(dt),x[:,u:u+H,v:v+W].astype(dt))
    return y
ref=direct(x,w,np.float64)
d32=direct(x,w,np.float32)
def wino(m,BT,G,AT):
    a=m+2; f=np.float32
    BT=BT.astype(f);G=G.astype(f);AT=AT.astype(f)
    U=np.einsum('ik,ockl,jl->ocij',G,w,G).astype(f)
    y=np.zeros((O,H,W),f)
    for ti in range(H//m):
        for tj in range(W//m):
            d=x[:,ti*m:ti*m+a,tj*m:tj*m+a]
            V=np.einsum('ik,ckl,jl->cij',BT,d,BT).astype(f)
            M=np.einsum('ocij,cij->oij',U,V).astype(f)
            y[:,ti*m:ti*m+m,tj*m:tj*m+m]=np.einsum('ik,okl,jl->oij',AT,M,AT)
    return y
BT2=np.array([[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]],float)
G2=np.array([[1,0,0],[.5,.5,.5],[.5,-.5,.5],[0,0,1]])
AT2=np.array([[1,1,1,0],[0,1,-1,-1]],float)
BT4=np.array([[4,0,-5,0,1,0],[0,-4,-4,1,1,0],[0,4,-4,-1,1,0],[0,-2,-1,2,1,0],[0,2,-1,-2,1,0],[0,4,0,-5,0,1]],float)
G4=np.array([[1/4,0,0],[-1/6,-1/6,-1/6],[-1/6,1/6,-1/6],[1/24,1/12,1/6],[1/24,-1/12,1/6],[0,0,1]])
AT4=np.array([[1,1,1,1,1,0],[0,1,-1,2,-2,0],[0,1,1,4,4,0],[0,1,-1,8,-8,1]],float)
w2=wino(2,BT2,G2,AT2); w4=wino(4,BT4,G4,AT4)
m=abs(ref).max()
for n,y in [('direct32',d32),('F23',w2),('F43',w4)]:
    e=abs(y-ref); print(n, e.max()/m, np.sqrt((e**2).mean())/m)
