"""architecture"""
