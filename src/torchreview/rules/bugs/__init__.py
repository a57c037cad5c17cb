"""bugs"""
